// Package auth authenticates callers by bearer token: customers with the
// tokens the lab reset hands out, and the lab's administrator.
package auth

import (
	"context"
	"crypto/subtle"
	"net/http"
	"strings"
	"unicode/utf8"

	"idemlab/kit/problem"
)

type customerKey struct{}

// Customer returns the authenticated customer's id, or "" outside an
// authenticated request.
func Customer(ctx context.Context) string {
	id, _ := ctx.Value(customerKey{}).(string)
	return id
}

// WithCustomer returns a context authenticated as customer.
func WithCustomer(ctx context.Context, customer string) context.Context {
	return context.WithValue(ctx, customerKey{}, customer)
}

// BearerToken returns the token of an "Authorization: Bearer <token>"
// header, or "" if there is none.
func BearerToken(r *http.Request) string {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

// Lookup finds the customer a token belongs to; it returns a 401 problem
// error for an unknown token.
type Lookup func(ctx context.Context, token string) (string, error)

// Customers is middleware that lets through only requests with a known
// customer token, and puts the customer in the request's context. A token
// that is not UTF-8 is no customer's, and is refused before lookup sees
// it: PostgreSQL refuses to compare such a text, and its lookup would fail
// with 500 where SQLite's finds nobody.
func Customers(lookup Lookup) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			token := BearerToken(r)
			if token == "" {
				problem.Write(w, problem.New(problem.Unauthorized, "send Authorization: Bearer <customer token>"))
				return
			}
			if !utf8.ValidString(token) {
				problem.Write(w, problem.New(problem.Unauthorized, "unknown token: it is not UTF-8"))
				return
			}
			customer, err := lookup(r.Context(), token)
			if err != nil {
				problem.Write(w, err)
				return
			}
			next.ServeHTTP(w, r.WithContext(WithCustomer(r.Context(), customer)))
		})
	}
}

// Admin is middleware that lets through only requests carrying the admin token.
func Admin(token string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got := BearerToken(r)
			if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
				problem.Write(w, problem.New(problem.Unauthorized, "lab endpoints need Authorization: Bearer <admin token>"))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}
