package credit

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Env is the reference functions' configuration.
type Env struct {
	ProcessedTable string // PROCESSED_TABLE, required
	AccountsTable  string // ACCOUNTS_TABLE, required
	// RetentionDays is RETENTION_DAYS, a whole number of days ≥ 1, or 0 when
	// unset (the kit's default applies).
	RetentionDays int
	// ReceiptsURL is RECEIPTS_URL: the receipts service each credit first
	// obtains a receipt from (Receipts), or "" for none.
	ReceiptsURL string
}

// LoadEnv reads the environment; a missing or malformed variable is an
// error naming it, for the function to fail at start-up with.
func LoadEnv(getenv func(string) string) (Env, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	e := Env{ProcessedTable: getenv("PROCESSED_TABLE"), AccountsTable: getenv("ACCOUNTS_TABLE")}
	var missing []string
	if e.ProcessedTable == "" {
		missing = append(missing, "PROCESSED_TABLE")
	}
	if e.AccountsTable == "" {
		missing = append(missing, "ACCOUNTS_TABLE")
	}
	if len(missing) > 0 {
		return Env{}, fmt.Errorf("missing environment variable(s): %s", strings.Join(missing, ", "))
	}
	if v := getenv("RETENTION_DAYS"); v != "" {
		days, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || days < 1 {
			return Env{}, fmt.Errorf("RETENTION_DAYS=%q: must be a whole number of days, at least 1", v)
		}
		e.RetentionDays = days
	}
	if v := strings.TrimSpace(getenv("RECEIPTS_URL")); v != "" {
		if err := checkReceiptsURL(v); err != nil {
			return Env{}, err
		}
		e.ReceiptsURL = v
	}
	return e, nil
}
