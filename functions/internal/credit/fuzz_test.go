package credit

import (
	"errors"
	"testing"
)

// FuzzParse: any body either parses into a credit that satisfies every rule
// or fails with ErrInvalid; never a panic.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		`{"id":"evt_001","account":"acc-9","cents":500}`,
		`{"account":"a","cents":9223372036854775807}`,
		`{"account":"a","cents":9223372036854775808}`,
		`{"account":"a","cents":-1}`,
		`{"account":"a","cents":1e3}`,
		`{"account":"a","cents":"5"}`,
		`{"account":"a","cents":1}{}`,
		"{\"account\":\"\xff\",\"cents\":1}",
		`[]`, `null`, ``, `{`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		c, err := Parse(body)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not match ErrInvalid", err)
			}
			return
		}
		if c.Account == "" || c.Cents <= 0 {
			t.Fatalf("accepted an invalid credit %+v from %q", c, body)
		}
	})
}
