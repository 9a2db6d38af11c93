package main

import (
	"reflect"
	"testing"
)

func TestPlan(t *testing.T) {
	dirs := []string{".", "functions", "idem/cmd"}
	for _, tc := range []struct {
		name  string
		first []string
		args  []string
		want  [][]string // each module's go test arguments
	}{
		{"no -first: the arguments as given", nil, []string{"-race", "-count=1", "./..."},
			[][]string{{"-race", "-count=1", "./..."}, {"-race", "-count=1", "./..."}, {"-race", "-count=1", "./..."}}},
		{"a package first in its innermost module, with one more at a time", []string{"idem/cmd/internal/tests/chaos"}, []string{"-race", "-count=1", "./..."},
			[][]string{{"-race", "-count=1", "./..."}, {"-race", "-count=1", "./..."}, {"-race", "-count=1", "-p=3", "./internal/tests/chaos", "./..."}}},
		{"a -p of the caller's kept", []string{"idem/cmd/internal/tests/chaos"}, []string{"-p=1", "./..."},
			[][]string{{"-p=1", "./..."}, {"-p=1", "./..."}, {"-p=1", "./internal/tests/chaos", "./..."}}},
		{"no packages: the module's own, after the first", []string{"functions/queue"}, []string{"-race"},
			[][]string{{"-race"}, {"-race", "-p=3", "./queue", "."}, {"-race"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runs, err := plan(dirs, tc.first, tc.args, 2)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range runs {
				if r.dir != dirs[i] || !reflect.DeepEqual(r.args, tc.want[i]) {
					t.Errorf("module %s: expect %q, got %s %q", dirs[i], tc.want[i], r.dir, r.args)
				}
			}
		})
	}
	if _, err := plan(dirs, []string{"../elsewhere"}, nil, 2); err == nil {
		t.Error("expect an error for a -first package in no module")
	}
}
