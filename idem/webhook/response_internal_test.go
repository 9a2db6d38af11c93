package webhook

import (
	"reflect"
	"testing"
)

func TestStoredResponseRoundTrip(t *testing.T) {
	for _, r := range []Response{
		{Status: 200, Headers: map[string]string{}, Body: nil},
		{Status: 201, Headers: map[string]string{"Content-Type": "application/json", "X-A": ""}, Body: []byte(`{"a":1}`)},
		{Status: 402, Headers: map[string]string{"B": "x"}, Body: []byte{0, 0xff, 1}},
		{Status: -3, Headers: map[string]string{}, Body: []byte("odd status kept as is")},
	} {
		got, err := decodeResponse(encodeResponse(r))
		if len(got.Body) == 0 {
			got.Body = nil
		}
		if err != nil || !reflect.DeepEqual(got, r) {
			t.Errorf("expect %+v, got %+v, %v", r, got, err)
		}
	}
}

// TestStoredResponseRefusesForeignBytes feeds every prefix of a valid
// encoding, and bytes another adapter might have stored; none may panic.
func TestStoredResponseRefusesForeignBytes(t *testing.T) {
	valid := encodeResponse(Response{Status: 200, Headers: map[string]string{"Content-Type": "text/plain"}, Body: []byte("ok")})
	for i := range len(valid) - len("ok") {
		if _, err := decodeResponse(valid[:i]); err == nil {
			t.Errorf("prefix of %d bytes: expect an error, got nil", i)
		}
	}
	for _, b := range [][]byte{nil, []byte(`{"status":"processed"}`), {1, 0x90, 0x03}, {1, 0, 0xff, 0xff, 0xff, 0xff, 0x0f}, {1, 0, 1, 0xff, 0x01}} {
		if _, err := decodeResponse(b); err == nil {
			t.Errorf("%q: expect an error, got nil", b)
		}
	}
}

func TestHeaderV1(t *testing.T) {
	for _, tc := range []struct {
		name   string
		single map[string]string
		multi  map[string][]string
		want   Header
	}{
		{"single only", map[string]string{"A": "1"}, nil, Header{"A": "1"}},
		{"both agree", map[string]string{"A": "1"}, map[string][]string{"A": {"1"}}, Header{"A": "1"}},
		{"repeated", map[string]string{"A": "2"}, map[string][]string{"A": {"1", "2"}}, Header{"A": "1,2"}},
		{"multi only", nil, map[string][]string{"A": {"1"}}, Header{"A": "1"}},
		{"neither", nil, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := headerV1(tc.single, tc.multi); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("expect %v, got %v", tc.want, got)
			}
		})
	}
}
