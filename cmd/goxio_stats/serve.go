package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"
)

// --serve ADDR: an HTTP endpoint for scrapers. Every request reads fresh
// snapshots of every live goxio process (or only -p PID):
//
//	/metrics  Prometheus text exposition
//	/json     the --json document

func serve(o *options, stderr *os.File, stop <-chan os.Signal) error {
	collect := func() ([]procView, error) {
		targets, err := openAll(o, stderr)
		if err != nil {
			return nil, err
		}
		defer closeAll(targets)
		var views []procView
		for _, t := range targets {
			snap, err := t.seg.Snapshot()
			if err != nil {
				fmt.Fprintf(stderr, "goxio_stats: process %d: %v\n", t.pid, err)
				continue
			}
			views = append(views, procView{pid: t.pid, name: t.name, snap: filtered(o, snap)})
		}
		return views, nil
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		views, err := collect()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		fmt.Fprint(w, prometheusText(views))
	})
	mux.HandleFunc("GET /json", func(w http.ResponseWriter, r *http.Request) {
		views, err := collect()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		var b bytes.Buffer
		if err := writeJSON(o, views, &b); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(b.Bytes())
	})
	ln, err := net.Listen("tcp", o.serve)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	fmt.Fprintf(stderr, "goxio_stats: serving /metrics and /json on http://%s\n", ln.Addr())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("serve: %w", err)
	case <-stop:
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return srv.Shutdown(ctx)
	}
}
