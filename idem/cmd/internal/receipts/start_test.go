package receipts

import (
	"errors"
	"net"
	"net/url"
	"testing"
)

func TestStartListensOnLoopbackOnly(t *testing.T) {
	for _, tc := range []struct {
		addr      string
		wantError error // nil: it starts
	}{
		{"127.0.0.1:0", nil},
		{"localhost:0", nil},
		{"[::1]:0", nil},
		{":0", ErrNotLoopback},
		{"0.0.0.0:0", ErrNotLoopback},
		{"[::]:0", ErrNotLoopback},
		{"192.168.1.10:0", ErrNotLoopback},
		{"example.com:0", ErrNotLoopback},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			if tc.addr == "[::1]:0" {
				if l, err := net.Listen("tcp", tc.addr); err != nil {
					t.Skipf("no IPv6 loopback here: %v", err)
				} else {
					l.Close()
				}
			}
			s, err := Start(tc.addr)
			if tc.wantError != nil {
				if !errors.Is(err, tc.wantError) {
					t.Errorf("expect %v, got %v", tc.wantError, err)
				}
				if s != nil {
					s.Close()
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			u, err := url.Parse(s.URL())
			if ip := net.ParseIP(u.Hostname()); err != nil || ip == nil || !ip.IsLoopback() || u.Path != "/receipts" || u.Port() == "0" {
				t.Errorf("URL: expect http://<loopback>:<port>/receipts, got %s", s.URL())
			}
			if a := mustCall(t, s.URL(), "k", credit1("m")); a.status != 201 {
				t.Errorf("expect 201, got %+v", a)
			}
		})
	}
	if _, err := Start("127.0.0.1"); err == nil || errors.Is(err, ErrNotLoopback) {
		t.Errorf("an address without a port: expect a parse error, got %v", err)
	}
}
