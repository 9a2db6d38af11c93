package main

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/idemkit/kit/idem/cmd/internal/localstack"
	"github.com/idemkit/kit/idem/cmd/internal/receipts"
)

// TestPrintReceipts: the demo's ledger prints what there is, whether the
// functions call out or not, and fails nothing.
func TestPrintReceipts(t *testing.T) {
	type post struct{ key, body string }
	credit := func(id, acc string) post {
		return post{"k-" + id, `{"id":"` + id + `","account":"` + acc + `","cents":100}`}
	}
	for _, tc := range []struct {
		name    string
		service bool
		posts   []post
		credits map[string]int
		want    []string
	}{
		{"no service", false, nil, map[string]int{"acc-1": 1}, []string{"no receipts service"}},
		{"no call yet", true, nil, map[string]int{"acc-1": 1}, []string{
			"0 call(s), 0 receipt(s) issued", "the functions made no call", "acc-1        -",
		}},
		{"one receipt per credit", true, []post{credit("m1", "acc-1"), credit("m1", "acc-1"), credit("m2", "acc-2")}, map[string]int{"acc-1": 1, "acc-2": 1}, []string{
			"3 call(s), 2 receipt(s) issued, at most 1", "one receipt per credit (2), although every message was delivered 3 times",
			"acc-1        -                     1        1        2  ok",
		}},
		{"a receipt too many", true, []post{credit("m1", "acc-1"), credit("m1-again", "acc-1")}, map[string]int{"acc-1": 1}, []string{
			"2 receipt(s) for 1 credit(s)", "UNEXPECTED",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &localstack.Stack{}
			if tc.service {
				srv, err := receipts.Start("127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				defer srv.Close()
				s.Receipts = srv
				for _, p := range tc.posts {
					req, _ := http.NewRequest(http.MethodPost, srv.URL(), strings.NewReader(p.body))
					req.Header.Set("Idempotency-Key", p.key)
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					resp.Body.Close()
				}
			}
			var out strings.Builder
			printReceipts(context.Background(), &out, s, "", tc.credits, 3) // no table: no lastReceipt
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("expect %q in:\n%s", w, out.String())
				}
			}
		})
	}
}
