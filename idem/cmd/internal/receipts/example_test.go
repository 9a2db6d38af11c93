package receipts_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/idemkit/kit/idem/cmd/internal/receipts"
)

func Example() {
	srv, err := receipts.Start("127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	// A caller's retry: the same key and body, twice.
	for range 2 {
		req, _ := http.NewRequest(http.MethodPost, srv.URL(), strings.NewReader(`{"id":"m-1","account":"acc-1","cents":500}`))
		req.Header.Set("Idempotency-Key", "credits/m-1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		var v struct{ Receipt string }
		_ = json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		fmt.Printf("%d %s replayed=%q\n", resp.StatusCode, v.Receipt, resp.Header.Get("Idempotent-Replayed"))
	}
	fmt.Println("issued:", srv.Issued(), "calls:", len(srv.Calls()), "max in flight:", srv.MaxInFlight())
	// Output:
	// 201 rcpt_000001 replayed=""
	// 200 rcpt_000001 replayed="true"
	// issued: 1 calls: 2 max in flight: 1
}
