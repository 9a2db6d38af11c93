package localstack

import (
	"testing"

	"github.com/idemkit/kit/idem/cmd/internal/receipts"
)

// TestEnvironReceiptsURL: the stack's receipts service reaches a function
// that declares RECEIPTS_URL without a value, and nothing else's value is
// replaced.
func TestEnvironReceiptsURL(t *testing.T) {
	srv, err := receipts.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	const given = "https://payments.example/receipts"
	for _, tc := range []struct {
		name     string
		template map[string]string // the function's resolved Environment.Variables
		optEnv   map[string]string
		running  bool // the stack runs the service
		want     string
		wantSet  bool
	}{
		{"declared empty", map[string]string{receiptsEnv: ""}, nil, true, srv.URL(), true},
		{"declared empty, no service", map[string]string{receiptsEnv: ""}, nil, false, "", true},
		{"a parameter's value", map[string]string{receiptsEnv: given}, nil, true, given, true},
		{"Options.Env's value", map[string]string{receiptsEnv: ""}, map[string]string{receiptsEnv: given}, true, given, true},
		{"Options.Env's empty value", map[string]string{receiptsEnv: ""}, map[string]string{receiptsEnv: ""}, true, "", true},
		{"not declared", map[string]string{"PROCESSED_TABLE": "p"}, nil, true, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Stack{Options: Options{Region: "us-east-1", Env: tc.optEnv}, DynamoDBEndpoint: "http://127.0.0.1:41001"}
			if tc.running {
				s.Receipts = srv
			}
			env := envMap(s.environ(&FunctionSpec{LogicalID: "F", Handler: "bootstrap", Env: tc.template}, "/build/F/bootstrap"))
			got, set := env[receiptsEnv]
			if got != tc.want || set != tc.wantSet {
				t.Errorf("%s: expect %q (set %v), got %q (set %v)", receiptsEnv, tc.want, tc.wantSet, got, set)
			}
		})
	}
}

// TestStartReceipts: the service starts only when a function wants it and
// the options allow it, on the address given.
func TestStartReceipts(t *testing.T) {
	wants := map[string]*FunctionSpec{"F": {Env: map[string]string{receiptsEnv: ""}}, "G": {Env: map[string]string{}}}
	for _, tc := range []struct {
		name    string
		specs   map[string]*FunctionSpec
		opts    Options
		want    bool
		wantErr bool
	}{
		{"a function wants it", wants, Options{}, true, false},
		{"none wants it", map[string]*FunctionSpec{"G": {Env: map[string]string{}}}, Options{}, false, false},
		{"the template gives a URL", map[string]*FunctionSpec{"F": {Env: map[string]string{receiptsEnv: "http://x"}}}, Options{}, false, false},
		{"Options.NoReceipts", wants, Options{NoReceipts: true}, false, false},
		{"a non-loopback address", wants, Options{ReceiptsAddr: "0.0.0.0:0"}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.opts
			o.Template, o.Log = "../../../../template.yaml", &syncBuffer{}
			if err := o.setDefaults(); err != nil {
				t.Fatal(err)
			}
			s := &Stack{Options: o, Specs: tc.specs}
			err := s.startReceipts()
			if (err != nil) != tc.wantErr {
				t.Fatalf("expect error %v, got %v", tc.wantErr, err)
			}
			if (s.Receipts != nil) != tc.want {
				t.Fatalf("expect the service running %v, got %v", tc.want, s.Receipts != nil)
			}
			if s.Receipts != nil {
				defer s.Receipts.Close()
				if env := envMap(s.environ(tc.specs["F"], "/b")); env[receiptsEnv] != s.Receipts.URL() {
					t.Errorf("F: expect %s=%s, got %q", receiptsEnv, s.Receipts.URL(), env[receiptsEnv])
				}
			}
		})
	}
}
