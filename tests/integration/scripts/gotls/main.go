// main.go - a Go HTTPS server and client (standard library only, HTTP/1.1 over crypto/tls) for
// test_l7_gotls: l7probe's uprobes on crypto/tls.(*Conn).Read/Write see both sides.
//
//	gotls server CERT KEY PORT   serves / (200) and /missing/* (404); prints {"ready": pid}
//	gotls client PORT N          prints {"ready": pid}, waits for a line on stdin, makes N keep-alive
//	                             requests (every fifth one a 404), prints {"requests": N, "errors": E,
//	                             "latency_ns": ..., "bytes_sent": plaintext written}, waits for another
//	                             line, exits
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"
)

// countConn counts the plaintext the client writes (the *tls.Conn inside is untouched, so the
// probe's view of crypto/tls is the usual one).
type countConn struct {
	net.Conn
	sent *int64
}

func (c countConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	*c.sent += int64(n)
	return n, err
}

func server(cert, key, port string) {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, "hello from go\n")
	})
	srv := &http.Server{
		Addr:    "127.0.0.1:" + port,
		Handler: mux,
		// HTTP/1.1 only: an empty TLSNextProto turns HTTP/2 off
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){},
	}
	fmt.Printf("{\"ready\": %d}\n", os.Getpid())
	if err := srv.ListenAndServeTLS(cert, key); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func client(port string, n int) {
	var sent int64
	cfg := &tls.Config{InsecureSkipVerify: true}
	tr := &http.Transport{
		DialTLSContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			raw, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			tc := tls.Client(raw, cfg)
			if err := tc.HandshakeContext(ctx); err != nil {
				raw.Close()
				return nil, err
			}
			return countConn{tc, &sent}, nil
		},
		TLSNextProto:      map[string]func(string, *tls.Conn) http.RoundTripper{},
		ForceAttemptHTTP2: false,
		MaxIdleConns:      1,
	}
	c := &http.Client{Transport: tr}
	in := bufio.NewReader(os.Stdin)
	fmt.Printf("{\"ready\": %d}\n", os.Getpid())
	in.ReadString('\n')
	errors := 0
	var lat time.Duration
	for i := 0; i < n; i++ {
		path := "/"
		if i%5 == 4 {
			path = "/missing/" + strconv.Itoa(i)
		}
		t0 := time.Now()
		resp, err := c.Get("https://127.0.0.1:" + port + path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		lat += time.Since(t0)
		if resp.StatusCode >= 400 {
			errors++
		}
	}
	fmt.Printf("{\"requests\": %d, \"errors\": %d, \"latency_ns\": %d, \"bytes_sent\": %d}\n", n, errors,
		lat.Nanoseconds(), sent)
	in.ReadString('\n')
}

func main() {
	if len(os.Args) >= 5 && os.Args[1] == "server" {
		server(os.Args[2], os.Args[3], os.Args[4])
	} else if len(os.Args) >= 4 && os.Args[1] == "client" {
		n, _ := strconv.Atoi(os.Args[3])
		client(os.Args[2], n)
	} else {
		fmt.Fprintln(os.Stderr, "usage: gotls server CERT KEY PORT | gotls client PORT N")
		os.Exit(2)
	}
}
