package credit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
)

// ErrInvalid matches every error Parse returns: the body is malformed, and
// retrying it will not help.
var ErrInvalid = errors.New("invalid credit")

// Credit is one credit message.
type Credit struct {
	// ID is the sender's event id; optional, some transports carry the key
	// elsewhere.
	ID      string
	Account string
	Cents   int64
}

type invalidError struct{ reason string }

func (e *invalidError) Error() string        { return "invalid credit: " + e.reason }
func (e *invalidError) Is(target error) bool { return target == ErrInvalid }

func invalid(format string, args ...any) error {
	return &invalidError{reason: fmt.Sprintf(format, args...)}
}

// Parse reads body, which must be exactly one JSON object in valid UTF-8
// (encoding/json alone accepts invalid UTF-8 and, with a Decoder, trailing
// data), with "account" a non-empty string, "cents" a positive whole number
// that fits in 64 bits, and "id", when present, a string.
func Parse(body []byte) (Credit, error) {
	if !utf8.Valid(body) {
		return Credit{}, invalid("body is not valid UTF-8")
	}
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 {
		return Credit{}, invalid("body is empty")
	}
	if trimmed[0] != '{' {
		return Credit{}, invalid("body is not a JSON object")
	}
	var raw struct {
		ID      json.RawMessage `json:"id"`
		Account json.RawMessage `json:"account"`
		Cents   json.RawMessage `json:"cents"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&raw); err != nil {
		return Credit{}, invalid("body is not valid JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Credit{}, invalid("body has data after the JSON object")
	}
	var c Credit
	if len(raw.ID) > 0 && string(raw.ID) != "null" {
		if err := json.Unmarshal(raw.ID, &c.ID); err != nil {
			return Credit{}, invalid(`"id" must be a string`)
		}
	}
	if err := json.Unmarshal(raw.Account, &c.Account); err != nil || len(raw.Account) == 0 {
		return Credit{}, invalid(`"account" must be a string`)
	}
	if c.Account == "" {
		return Credit{}, invalid(`"account" is empty`)
	}
	cents := string(raw.Cents)
	if cents == "" || cents == "null" {
		return Credit{}, invalid(`"cents" is missing`)
	}
	n, err := strconv.ParseInt(cents, 10, 64)
	switch {
	case errors.Is(err, strconv.ErrRange):
		return Credit{}, invalid(`"cents" %s does not fit in 64 bits`, cents)
	case err != nil:
		return Credit{}, invalid(`"cents" must be a whole number, got %s`, cents)
	case n <= 0:
		return Credit{}, invalid(`"cents" must be positive, got %d`, n)
	}
	c.Cents = n
	return c, nil
}

// Write is the credit's effect: ADD balance cents on the account's item in
// table (partition key "account" (S), attribute "balance" (N)).
func Write(table string, c Credit) (types.TransactWriteItem, error) {
	return idem.Update(table, map[string]string{"account": c.Account},
		expression.Add(expression.Name("balance"), expression.Value(c.Cents)))
}
