package localstack

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
)

// maxPayload is Lambda's limit on a synchronous invoke's request.
const maxPayload = 6 << 20

// Invoker invokes a function by logical id.
type Invoker interface {
	Invoke(ctx context.Context, function string, payload []byte) ([]byte, error)
}

// HTTPAPI serves a template's HttpApi routes as API Gateway does with
// payload format 2.0: it turns each request into an
// events.APIGatewayV2HTTPRequest, invokes the route's function, and turns
// its events.APIGatewayV2HTTPResponse into the HTTP response.
type HTTPAPI struct {
	Routes  []Route
	Invoker Invoker
	// AccountID and Region fill the request context.
	AccountID string
	// Logf receives one line per request. Defaults to none.
	Logf func(format string, args ...any)
	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
}

// ServeHTTP implements http.Handler.
func (a *HTTPAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	route, params, ok := matchRoute(a.Routes, r.Method, r.URL.Path)
	if !ok {
		writeMessage(w, http.StatusNotFound, "Not Found")
		a.logf("%s %s → 404 (no route)", r.Method, r.URL.Path)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxPayload))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeMessage(w, http.StatusRequestEntityTooLarge, "Request Entity Too Large")
			return
		}
		writeMessage(w, http.StatusBadRequest, "Bad Request")
		return
	}
	ev := a.Event(r, route, params, body)
	payload, err := json.Marshal(ev)
	if err != nil {
		writeMessage(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	out, err := a.Invoker.Invoke(r.Context(), route.Function, payload)
	if err != nil {
		a.logf("%s %s → %s: %v", r.Method, r.URL.Path, route.Function, err)
		writeMessage(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	status, err := writeResponse(w, out)
	if err != nil {
		a.logf("%s %s → %s: malformed response: %v", r.Method, r.URL.Path, route.Function, err)
		writeMessage(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	a.logf("%s %s → %s → %d (%v)", r.Method, r.URL.Path, route.Function, status, time.Since(start).Round(time.Millisecond))
}

func (a *HTTPAPI) logf(format string, args ...any) {
	if a.Logf != nil {
		a.Logf(format, args...)
	}
}

// Event is the API Gateway event of a request, with body already read.
func (a *HTTPAPI) Event(r *http.Request, route Route, params map[string]string, body []byte) events.APIGatewayV2HTTPRequest {
	now := time.Now
	if a.Now != nil {
		now = a.Now
	}
	t := now().UTC()
	headers := map[string]string{}
	var cookies []string
	for k, vs := range r.Header {
		lk := strings.ToLower(k)
		if lk == "cookie" {
			for _, v := range vs {
				for c := range strings.SplitSeq(v, ";") {
					if c = strings.TrimSpace(c); c != "" {
						cookies = append(cookies, c)
					}
				}
			}
			continue
		}
		headers[lk] = strings.Join(vs, ",")
	}
	headers["host"] = r.Host
	if len(body) > 0 {
		headers["content-length"] = fmt.Sprint(len(body))
	}
	sourceIP, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		sourceIP = r.RemoteAddr
	}
	headers["x-forwarded-for"] = sourceIP
	headers["x-forwarded-proto"] = "http"
	if _, port, err := net.SplitHostPort(r.Host); err == nil {
		headers["x-forwarded-port"] = port
	}
	var query map[string]string
	if q, err := url.ParseQuery(r.URL.RawQuery); err == nil && len(q) > 0 {
		query = map[string]string{}
		for k, vs := range q {
			query[k] = strings.Join(vs, ",")
		}
	}
	host, _, err := net.SplitHostPort(r.Host)
	if err != nil {
		host = r.Host
	}
	prefix, _, _ := strings.Cut(host, ".")
	requestID := newRequestID()
	ev := events.APIGatewayV2HTTPRequest{
		Version:               "2.0",
		RouteKey:              route.Key(),
		RawPath:               r.URL.EscapedPath(),
		RawQueryString:        r.URL.RawQuery,
		Cookies:               cookies,
		Headers:               headers,
		QueryStringParameters: query,
		PathParameters:        params,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey:     route.Key(),
			AccountID:    a.AccountID,
			Stage:        "$default",
			RequestID:    requestID,
			APIID:        "local",
			DomainName:   host,
			DomainPrefix: prefix,
			Time:         t.Format("02/Jan/2006:15:04:05 -0700"),
			TimeEpoch:    t.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method:    r.Method,
				Path:      r.URL.Path,
				Protocol:  r.Proto,
				SourceIP:  sourceIP,
				UserAgent: r.UserAgent(),
			},
		},
	}
	if len(body) > 0 {
		if isText(r.Header.Get("Content-Type"), body) {
			ev.Body = string(body)
		} else {
			ev.Body = base64.StdEncoding.EncodeToString(body)
			ev.IsBase64Encoded = true
		}
	}
	return ev
}

// isText reports whether API Gateway would pass a body as text: valid UTF-8
// of a textual media type, or of none.
func isText(contentType string, body []byte) bool {
	if !utf8.Valid(body) {
		return false
	}
	if contentType == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	switch {
	case strings.HasPrefix(mt, "text/"),
		strings.HasSuffix(mt, "+json"), strings.HasSuffix(mt, "+xml"),
		mt == "application/json", mt == "application/xml", mt == "application/javascript",
		mt == "application/x-www-form-urlencoded", mt == "application/graphql":
		return true
	}
	return false
}

// writeResponse writes a payload format 2.0 response. A response without a
// statusCode is, as in API Gateway, a 200 whose body is the JSON itself.
func writeResponse(w http.ResponseWriter, out []byte) (int, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(out, &probe); err != nil || probe["statusCode"] == nil {
		if !json.Valid(out) {
			return 0, fmt.Errorf("not JSON: %.200q", out)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(out)
		return http.StatusOK, nil
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		return 0, err
	}
	if resp.StatusCode < 100 || resp.StatusCode > 599 {
		return 0, fmt.Errorf("statusCode %d", resp.StatusCode)
	}
	body := []byte(resp.Body)
	if resp.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(resp.Body)
		if err != nil {
			return 0, fmt.Errorf("body is not base64: %w", err)
		}
		body = b
	}
	h := w.Header()
	for k, vs := range resp.MultiValueHeaders {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	for k, v := range resp.Headers {
		h.Set(k, v)
	}
	for _, c := range resp.Cookies {
		h.Add("Set-Cookie", c)
	}
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "application/json")
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(body)
	return resp.StatusCode, nil
}

func writeMessage(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]string{"message": msg})
	_, _ = w.Write(b)
}

// matchRoute picks a request's route as API Gateway does: the most specific
// path wins (literal segments over {params}, {params} over a greedy
// {proxy+}), a method over ANY, and $default catches the rest.
func matchRoute(routes []Route, method, path string) (Route, map[string]string, bool) {
	type candidate struct {
		r      Route
		params map[string]string
		score  []int
	}
	var best *candidate
	reqSegs := strings.Split(strings.Trim(path, "/"), "/")
	for _, r := range routes {
		if r.Method != "ANY" && r.Method != method {
			continue
		}
		methodScore := 0
		if r.Method != "ANY" {
			methodScore = 1
		}
		var c *candidate
		if r.Path == "$default" {
			c = &candidate{r: r, score: []int{0, 0, 0, methodScore}}
		} else if params, literals, greedy, ok := matchPath(r.Path, reqSegs); ok {
			notGreedy := 1
			if greedy {
				notGreedy = 0
			}
			c = &candidate{r: r, params: params, score: []int{1, notGreedy, literals, methodScore}}
		}
		if c != nil && (best == nil || slices.Compare(c.score, best.score) > 0) {
			best = c
		}
	}
	if best == nil {
		return Route{}, nil, false
	}
	return best.r, best.params, true
}

func matchPath(pattern string, reqSegs []string) (params map[string]string, literals int, greedy bool, ok bool) {
	segs := strings.Split(strings.Trim(pattern, "/"), "/")
	for i, s := range segs {
		if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "+}") {
			if i != len(segs)-1 || i >= len(reqSegs) || reqSegs[i] == "" {
				return nil, 0, false, false
			}
			if params == nil {
				params = map[string]string{}
			}
			params[s[1:len(s)-2]] = strings.Join(reqSegs[i:], "/")
			return params, literals, true, true
		}
		if i >= len(reqSegs) {
			return nil, 0, false, false
		}
		if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
			if reqSegs[i] == "" {
				return nil, 0, false, false
			}
			if params == nil {
				params = map[string]string{}
			}
			v, err := url.PathUnescape(reqSegs[i])
			if err != nil {
				v = reqSegs[i]
			}
			params[s[1:len(s)-1]] = v
			continue
		}
		if s != reqSegs[i] {
			return nil, 0, false, false
		}
		literals++
	}
	if len(segs) != len(reqSegs) {
		return nil, 0, false, false
	}
	return params, literals, false, true
}
