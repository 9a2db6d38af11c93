package credit

import (
	"fmt"
	"net/url"
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
	// LedgerQueueURL is LEDGER_QUEUE_URL: the SQS queue each applied credit
	// is announced on, as a credit.applied message sent through the outbox
	// (Applier), or "" for none.
	LedgerQueueURL string
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
	days, err := RetentionDays(getenv)
	if err != nil {
		return Env{}, err
	}
	e.RetentionDays = days
	for _, v := range []struct {
		name string
		dst  *string
	}{{"RECEIPTS_URL", &e.ReceiptsURL}, {"LEDGER_QUEUE_URL", &e.LedgerQueueURL}} {
		if *v.dst, err = httpURL(getenv, v.name); err != nil {
			return Env{}, err
		}
	}
	return e, nil
}

// RetentionDays reads RETENTION_DAYS: a whole number of days ≥ 1, or 0
// when unset (the kit's default applies).
func RetentionDays(getenv func(string) string) (int, error) {
	v := getenv("RETENTION_DAYS")
	if v == "" {
		return 0, nil
	}
	days, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || days < 1 {
		return 0, fmt.Errorf("RETENTION_DAYS=%q: must be a whole number of days, at least 1", v)
	}
	return days, nil
}

// httpURL reads the variable name, an absolute http or https URL, or ""
// when it is unset or blank.
func httpURL(getenv func(string) string, name string) (string, error) {
	v := strings.TrimSpace(getenv(name))
	if v == "" {
		return "", nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%s=%q: must be an absolute http:// or https:// URL", name, v)
	}
	return v, nil
}
