// Command loadgen loads one URL over HTTP/1.1 keep-alive connections, plain or TLS (optionally
// presenting a client certificate, which wrk cannot), and prints one JSON line:
//
//	{"rps":..., "p50ms":..., "p99ms":..., "requests":..., "non2xx":..., "errors":..., "connections":...}
//
// Each of -c connections is a goroutine sending GET requests one after the other on its own
// connection (a new one after an error), like wrk. Latency is from writing a request to reading
// the end of its response. With -rate, the connections together aim at that many requests/s,
// each waiting for its next slot (no catch-up bursts when behind), for a latency at a given load.
// Requests completed during -warmup are not counted.
//
//	loadgen -url https://127.0.0.1:8443/x -c 64 -d 10s -warmup 2s \
//	  -H 'Authorization: token' -cert client.crt -key client.key -cacert server.crt
package main

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

type headerList []string

func (h *headerList) String() string     { return strings.Join(*h, ", ") }
func (h *headerList) Set(v string) error { *h = append(*h, v); return nil }

type result struct {
	RPS         float64 `json:"rps"`
	P50ms       float64 `json:"p50ms"`
	P99ms       float64 `json:"p99ms"`
	Requests    int     `json:"requests"`
	Non2xx      int     `json:"non2xx"`
	Errors      int     `json:"errors"`
	Connections int     `json:"connections"`
}

// worker is what one connection measured.
type worker struct {
	latencies []time.Duration
	non2xx    int
	errors    int
	lastErr   error
}

func main() {
	var headers headerList
	target := flag.String("url", "", "URL to GET (http or https)")
	conns := flag.Int("c", 64, "connections")
	duration := flag.Duration("d", 10*time.Second, "measured duration")
	warmup := flag.Duration("warmup", 0, "load before measuring, not counted")
	threads := flag.Int("threads", 0, "OS threads running Go code (GOMAXPROCS; 0: Go's default)")
	rate := flag.Float64("rate", 0, "total requests/s to aim at (0: as fast as possible)")
	cert := flag.String("cert", "", "client certificate (PEM) to present")
	key := flag.String("key", "", "its private key (PEM)")
	cacert := flag.String("cacert", "", "CA (PEM) to verify the server with")
	insecure := flag.Bool("insecure", false, "do not verify the server's certificate")
	servername := flag.String("servername", "", "TLS server name (default: the URL's host)")
	flag.Var(&headers, "H", "request header 'Name: value' (repeatable)")
	flag.Parse()
	if *threads > 0 {
		runtime.GOMAXPROCS(*threads)
	}
	// Few, long-lived allocations (the latency samples): collect rarely.
	debug.SetGCPercent(400)
	if err := run(*target, *conns, *duration, *warmup, *rate, headers, *cert, *key, *cacert, *insecure, *servername); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

func run(target string, conns int, duration, warmup time.Duration, rate float64, headers []string,
	cert, key, cacert string, insecure bool, servername string) error {
	u, err := url.Parse(target)
	if err != nil {
		return err
	}
	if conns < 1 {
		return fmt.Errorf("-c must be at least 1")
	}
	addr := u.Host
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "https" {
			port = "443"
		}
		addr = net.JoinHostPort(u.Hostname(), port)
	}
	var tlsConfig *tls.Config
	switch u.Scheme {
	case "http":
	case "https":
		tlsConfig = &tls.Config{ServerName: u.Hostname(), InsecureSkipVerify: insecure, MinVersion: tls.VersionTLS12}
		if servername != "" {
			tlsConfig.ServerName = servername
		}
		if cacert != "" {
			pem, err := os.ReadFile(cacert)
			if err != nil {
				return err
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return fmt.Errorf("%s: no certificate", cacert)
			}
			tlsConfig.RootCAs = pool
		}
		if cert != "" || key != "" {
			pair, err := tls.LoadX509KeyPair(cert, key)
			if err != nil {
				return err
			}
			tlsConfig.Certificates = []tls.Certificate{pair}
		}
	default:
		return fmt.Errorf("unsupported scheme %q", u.Scheme)
	}

	var req strings.Builder
	fmt.Fprintf(&req, "GET %s HTTP/1.1\r\nHost: %s\r\n", u.RequestURI(), u.Host)
	for _, h := range headers {
		name, value, ok := strings.Cut(h, ":")
		if !ok {
			return fmt.Errorf("-H %q: want 'Name: value'", h)
		}
		fmt.Fprintf(&req, "%s: %s\r\n", strings.TrimSpace(name), strings.TrimSpace(value))
	}
	req.WriteString("\r\n")
	raw := []byte(req.String())

	dial := func() (net.Conn, error) {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			return nil, err
		}
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
		if tlsConfig == nil {
			return c, nil
		}
		t := tls.Client(c, tlsConfig)
		if err := t.Handshake(); err != nil {
			c.Close()
			return nil, err
		}
		return t, nil
	}

	// Fail fast on a wrong address or a refused handshake rather than counting errors.
	probe, err := dial()
	if err != nil {
		return err
	}
	probe.Close()

	var interval time.Duration
	if rate > 0 {
		interval = time.Duration(float64(conns) / rate * float64(time.Second))
	}
	start := time.Now()
	measureFrom := start.Add(warmup)
	end := measureFrom.Add(duration)
	workers := make([]worker, conns)
	var wg sync.WaitGroup
	for i := range workers {
		w := &workers[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			var conn net.Conn
			var br *bufio.Reader
			// Stagger the paced connections over one interval.
			next := start
			if interval > 0 {
				next = start.Add(time.Duration(i) * interval / time.Duration(conns))
			}
			for {
				if interval > 0 {
					if d := time.Until(next); d > 0 {
						time.Sleep(d)
					}
				}
				now := time.Now()
				if !now.Before(end) {
					break
				}
				if interval > 0 {
					next = next.Add(interval)
					if next.Before(now) {
						next = now.Add(interval)
					}
				}
				if conn == nil {
					c, err := dial()
					if err != nil {
						w.errors++
						w.lastErr = err
						time.Sleep(10 * time.Millisecond)
						continue
					}
					conn, br = c, bufio.NewReaderSize(c, 16<<10)
				}
				sent := time.Now()
				status, keep, err := roundTrip(conn, br, raw)
				done := time.Now()
				if err == nil && !keep {
					conn.Close()
					conn = nil
				}
				if err != nil {
					conn.Close()
					conn = nil
					if done.Before(end) {
						w.errors++
						w.lastErr = err
					}
					continue
				}
				if sent.Before(measureFrom) || done.After(end) {
					continue
				}
				w.latencies = append(w.latencies, done.Sub(sent))
				if status < 200 || status > 299 {
					w.non2xx++
				}
			}
			if conn != nil {
				conn.Close()
			}
		}()
	}
	wg.Wait()

	var all []time.Duration
	r := result{Connections: conns}
	for _, w := range workers {
		all = append(all, w.latencies...)
		r.Non2xx += w.non2xx
		r.Errors += w.errors
		if w.lastErr != nil && r.Errors == w.errors {
			fmt.Fprintln(os.Stderr, "loadgen: error:", w.lastErr)
		}
	}
	if len(all) == 0 {
		return fmt.Errorf("no request completed")
	}
	slices.Sort(all)
	r.Requests = len(all)
	r.RPS = math.Round(float64(len(all))/duration.Seconds()*100) / 100
	r.P50ms = percentile(all, 0.50)
	r.P99ms = percentile(all, 0.99)
	return json.NewEncoder(os.Stdout).Encode(r)
}

// roundTrip writes one request and reads its response to the end: its status, and whether the
// connection stays open. A lean HTTP/1.1 reader (status line, headers, a body with
// Content-Length or chunked), allocating nothing per request, so that the load generator's own
// cost stays low on a machine it shares with the server under test.
func roundTrip(conn net.Conn, br *bufio.Reader, raw []byte) (int, bool, error) {
	if _, err := conn.Write(raw); err != nil {
		return 0, false, err
	}
	line, err := br.ReadSlice('\n')
	if err != nil {
		return 0, false, err
	}
	// "HTTP/1.1 200 OK\r\n"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return 0, false, fmt.Errorf("malformed status line %q", line)
	}
	status, ok := atoi(line[9:12])
	if !ok {
		return 0, false, fmt.Errorf("malformed status line %q", line)
	}
	keep := line[7] == '1'
	length, chunked := -1, false
	for {
		line, err = br.ReadSlice('\n')
		if err != nil {
			return 0, false, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("content-length")):
			n, ok := atoi(value)
			if !ok {
				return 0, false, fmt.Errorf("malformed content-length %q", value)
			}
			length = n
		case bytes.EqualFold(name, []byte("transfer-encoding")):
			chunked = bytes.Contains(bytes.ToLower(value), []byte("chunked"))
		case bytes.EqualFold(name, []byte("connection")):
			v := bytes.ToLower(value)
			if bytes.Contains(v, []byte("close")) {
				keep = false
			} else if bytes.Contains(v, []byte("keep-alive")) {
				keep = true
			}
		}
	}
	switch {
	case status == 204 || status == 304 || (status >= 100 && status < 200):
	case chunked:
		for {
			line, err = br.ReadSlice('\n')
			if err != nil {
				return 0, false, err
			}
			size, err := strconv.ParseInt(string(bytes.TrimSpace(bytes.SplitN(line, []byte(";"), 2)[0])), 16, 64)
			if err != nil {
				return 0, false, fmt.Errorf("malformed chunk size %q", line)
			}
			if size == 0 {
				// Trailers, up to the empty line.
				for {
					line, err = br.ReadSlice('\n')
					if err != nil {
						return 0, false, err
					}
					if len(bytes.TrimRight(line, "\r\n")) == 0 {
						break
					}
				}
				break
			}
			if _, err := br.Discard(int(size) + 2); err != nil {
				return 0, false, err
			}
		}
	case length >= 0:
		if _, err := br.Discard(length); err != nil {
			return 0, false, err
		}
	default:
		// No length: the body runs to the end of the connection.
		_, err := io.Copy(io.Discard, br)
		return status, false, err
	}
	return status, keep, nil
}

// atoi reads a non-negative decimal number.
func atoi(b []byte) (int, bool) {
	if len(b) == 0 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// percentile of sorted latencies, in milliseconds (nearest rank).
func percentile(sorted []time.Duration, q float64) float64 {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	i = max(0, min(i, len(sorted)-1))
	return math.Round(float64(sorted[i].Microseconds())) / 1000
}
