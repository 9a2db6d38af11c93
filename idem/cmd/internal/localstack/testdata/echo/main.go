// Command echo is a Lambda function for the emulator tests: it answers
// with what it got, and fails, panics, exits or sleeps when asked to.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
)

type request struct {
	Fail    bool   `json:"fail"`
	Panic   bool   `json:"panic"`
	Exit    bool   `json:"exit"`
	SleepMS int    `json:"sleepMs"`
	HangMS  int    `json:"hangMs"` // a sleep deaf to the deadline
	Env     string `json:"env"`
}

type response struct {
	PID   int    `json:"pid"`
	Env   string `json:"env,omitempty"`
	Event any    `json:"event"`
}

func main() {
	lambda.Start(func(ctx context.Context, raw json.RawMessage) (response, error) {
		var req request
		_ = json.Unmarshal(raw, &req)
		switch {
		case req.Fail:
			return response{}, errors.New("asked to fail")
		case req.Panic:
			panic("asked to panic")
		case req.Exit:
			os.Exit(3)
		}
		time.Sleep(time.Duration(req.HangMS) * time.Millisecond)
		if req.SleepMS > 0 {
			select {
			case <-time.After(time.Duration(req.SleepMS) * time.Millisecond):
			case <-ctx.Done():
			}
		}
		var ev any
		_ = json.Unmarshal(raw, &ev)
		resp := response{PID: os.Getpid(), Event: ev}
		if req.Env != "" {
			resp.Env = os.Getenv(req.Env)
		}
		return resp, nil
	})
}
