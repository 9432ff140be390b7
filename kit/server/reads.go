package server

import (
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"idemlab/kit/auth"
	"idemlab/kit/problem"
	"idemlab/kit/respond"
)

// The kit's read endpoints: every one is owner-only.

func (s *Server) getAccount(w http.ResponseWriter, r *http.Request) {
	a, err := s.bank.Account(r.Context(), auth.Customer(r.Context()), chi.URLParam(r, "id"))
	reply(w, a, err)
}

func (s *Server) getEntries(w http.ResponseWriter, r *http.Request) {
	limit := 100
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			problem.Write(w, problem.New(problem.InvalidRequest, "limit must be 1..1000, got %q", v))
			return
		}
		limit = n
	}
	entries, err := s.bank.Entries(r.Context(), auth.Customer(r.Context()), chi.URLParam(r, "id"), limit)
	reply(w, map[string]any{"entries": entries}, err)
}

func (s *Server) getTransfer(w http.ResponseWriter, r *http.Request) {
	t, err := s.bank.GetTransfer(r.Context(), auth.Customer(r.Context()), chi.URLParam(r, "id"))
	reply(w, t, err)
}

func (s *Server) getDeposit(w http.ResponseWriter, r *http.Request) {
	d, err := s.bank.GetDeposit(r.Context(), auth.Customer(r.Context()), chi.URLParam(r, "id"))
	reply(w, d, err)
}

func reply(w http.ResponseWriter, v any, err error) {
	if err != nil {
		problem.Write(w, err)
		return
	}
	respond.JSON(w, http.StatusOK, v)
}
