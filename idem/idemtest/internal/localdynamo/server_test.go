package localdynamo_test

import (
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem/idemtest"
	"github.com/idemkit/kit/idem/idemtest/internal/localdynamo"
)

func TestMain(m *testing.M) { idemtest.Main(m) }

func TestSweepDeletesExpiredItemsOnly(t *testing.T) {
	srv := testServer(t)
	c := idemtest.Client(srv.Endpoint)
	table := idemtest.CreateTable(t, c, idemtest.Table{Name: "ttl", HashKey: "pk", TTLAttribute: "expiresAt"})
	plain := idemtest.CreateTable(t, c, idemtest.Table{Name: "nottl", HashKey: "pk"})
	now := time.Now().Unix()
	items := []struct {
		id      string
		expires types.AttributeValue
		gone    bool
	}{
		{"expired", n(int(now - 60)), true},
		{"future", n(int(now + 3600)), false},
		{"ancient", n(int(now - 6*365*24*3600)), false}, // DynamoDB ignores values over five years old
		{"string", s(strconv.FormatInt(now-60, 10)), false},
		{"none", nil, false},
	}
	ctx := context.Background()
	for _, tbl := range []string{table, plain} {
		for _, it := range items {
			item := map[string]types.AttributeValue{"pk": s(it.id)}
			if it.expires != nil {
				item["expiresAt"] = it.expires
			}
			if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: item}); err != nil {
				t.Fatal(err)
			}
		}
	}
	deleted, err := srv.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if deleted != 1 {
		t.Errorf("deleted: want 1, got %d", deleted)
	}
	for _, it := range items {
		key := map[string]types.AttributeValue{"pk": s(it.id)}
		if got := get(t, c, table, key) == nil; got != it.gone {
			t.Errorf("%s in TTL table: want gone=%v, got gone=%v", it.id, it.gone, got)
		}
		if get(t, c, plain, key) == nil {
			t.Errorf("%s deleted from a table without TTL", it.id)
		}
	}
}

func TestSweeperRunsOnItsInterval(t *testing.T) {
	srv := testServer(t, func(o *localdynamo.Options) { o.TTLSweepInterval = 100 * time.Millisecond })
	c := idemtest.Client(srv.Endpoint)
	table := idemtest.CreateTable(t, c, idemtest.Table{Name: "ttl", HashKey: "pk", TTLAttribute: "expiresAt"})
	ctx := context.Background()
	item := map[string]types.AttributeValue{"pk": s("old"), "expiresAt": n(int(time.Now().Unix() - 1))}
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
		t.Fatal(err)
	}
	// Waits for an event, not for a time: the test fails only if the
	// sweeper never runs (go test's own timeout).
	for get(t, c, table, map[string]types.AttributeValue{"pk": s("old")}) != nil {
		time.Sleep(50 * time.Millisecond)
	}
}

func TestStopLeavesNoProcessOrPort(t *testing.T) {
	srv, err := localdynamo.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	if u.Hostname() != "127.0.0.1" {
		t.Errorf("listens on %s, want 127.0.0.1", u.Hostname())
	}
	pid := srv.PID()
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("process %d still exists after Stop (kill -0: %v)", pid, err)
	}
	if conn, err := net.DialTimeout("tcp", u.Host, time.Second); err == nil {
		conn.Close()
		t.Errorf("port %s still accepts connections after Stop", u.Host)
	}
	if err := srv.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

func TestStartFailsClearly(t *testing.T) {
	dir := t.TempDir()
	noMoto := filepath.Join(dir, "python-without-moto")
	// -S skips site-packages, where moto lives.
	if err := os.WriteFile(noMoto, []byte("#!/bin/sh\nexec python3 -S \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, python, want string
	}{
		{"no python", filepath.Join(dir, "missing-python"), "not found"},
		{"no moto", noMoto, "pip install 'moto[server]'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := localdynamo.Start(context.Background(), func(o *localdynamo.Options) { o.Python = tc.python; o.Log = nil })
			if err == nil {
				_ = srv.Stop()
				t.Fatal("want an error, got a server")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

// testServer starts a server of the test's own, stopped when the test ends,
// for what only this launcher does (Sweep, Reset, a process to stop).
func testServer(tb testing.TB, optFns ...func(*localdynamo.Options)) *localdynamo.Server {
	tb.Helper()
	srv, err := localdynamo.Start(context.Background(), optFns...)
	if err != nil {
		tb.Fatalf("localdynamo: %v", err)
	}
	tb.Cleanup(func() { _ = srv.Stop() })
	return srv
}
