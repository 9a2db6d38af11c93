package receipts

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// adminPrefix is where the admin endpoints live, apart from the receipts
// URL so that no call to it can reach them.
const adminPrefix = "/_admin"

// adminRoutes serves the admin endpoints the package doc lists, for a
// process other than the one that started the service.
func (s *Server) adminRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST "+adminPrefix+"/fail", func(w http.ResponseWriter, r *http.Request) {
		n, err1 := intParam(r, "n", 1)
		status, err2 := intParam(r, "status", http.StatusInternalServerError)
		if err2 == nil && (status < 400 || status > 599) {
			err2 = fmt.Errorf("status: want an HTTP error status, 400 to 599, got %d", status)
		}
		if adminError(w, err1, err2) {
			return
		}
		s.FailNext(n, status)
		w.WriteHeader(http.StatusNoContent)
	})
	counted := func(set func(int)) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			n, err := intParam(r, "n", 1)
			if adminError(w, err) {
				return
			}
			set(n)
			w.WriteHeader(http.StatusNoContent)
		}
	}
	mux.HandleFunc("POST "+adminPrefix+"/hang", counted(s.HangNext))
	mux.HandleFunc("POST "+adminPrefix+"/drop", counted(s.DropAnswerNext))
	mux.HandleFunc("POST "+adminPrefix+"/latency", func(w http.ResponseWriter, r *http.Request) {
		ms, err := intParam(r, "ms", 0)
		if adminError(w, err) {
			return
		}
		s.SetLatency(time.Duration(ms) * time.Millisecond)
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST "+adminPrefix+"/reset", func(w http.ResponseWriter, r *http.Request) {
		s.Reset()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET "+adminPrefix+"/calls", func(w http.ResponseWriter, r *http.Request) {
		calls := s.Calls()
		if calls == nil {
			calls = []Call{} // [], not null
		}
		writeJSON(w, calls)
	})
	mux.HandleFunc("GET "+adminPrefix+"/stats", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, s.Stats())
	})
}

// intParam reads a non-negative integer query parameter.
func intParam(r *http.Request, name string, def int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s: want a non-negative integer, got %q", name, v)
	}
	return n, nil
}

// adminError answers 400 with the first error, if any, and tells whether
// it did.
func adminError(w http.ResponseWriter, errs ...error) bool {
	for _, err := range errs {
		if err != nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(apiError{Error: errorBody{Type: "invalid_request_error", Message: err.Error()}})
			return true
		}
	}
	return false
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
