// Package browser drives a headless Chromium over the DevTools protocol, for the tests that look
// at replaycheck's HTML report the way a person's browser shows it: load a page, collect what the
// page complained about (console errors, uncaught exceptions, failed loads, the browser's own
// error log), evaluate an expression in it and take a screenshot.
//
// It speaks the protocol over a pipe (--remote-debugging-pipe: the browser reads requests from its
// fd 3 and writes replies and events to its fd 4, each message a JSON object ended by a NUL byte),
// so it needs no port, no WebSocket and nothing beyond the standard library. Find says where
// Chromium is, or why it is not.
package browser

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// EnvChromium names the Chromium binary to use; unset, Find searches PATH.
const EnvChromium = "REPLAYCHECK_CHROMIUM"

// candidates are the names Chromium goes by, in the order Find tries them.
var candidates = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// Find returns the path of a Chromium binary: $REPLAYCHECK_CHROMIUM, else the first of chromium,
// chromium-browser, google-chrome and google-chrome-stable on PATH. The error names what it tried.
func Find() (string, error) {
	if p := os.Getenv(EnvChromium); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w", EnvChromium, p, err)
		}
		return p, nil
	}
	for _, name := range candidates {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no Chromium: none of %s on PATH and %s is not set (Debian: apt-get install chromium)",
		strings.Join(candidates, ", "), EnvChromium)
}

// Timeout bounds every request and every wait for an event.
var Timeout = 30 * time.Second

// Browser is one headless Chromium process.
type Browser struct {
	cmd     *exec.Cmd
	profile string   // the fresh --user-data-dir, removed by Close
	send    *os.File // the browser's fd 3
	recv    *os.File // the browser's fd 4
	stderr  bytes.Buffer

	msgs chan message // everything the browser says, in order, until it closes fd 4
	mu   sync.Mutex   // guards next and writes to send
	next int
}

// message is one protocol message: a reply (ID set) or an event (Method set).
type message struct {
	ID        int             `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// Start starts Chromium (path, from Find) headless with a fresh profile, no network of its own
// (no background requests, no updates, no sync: a closed machine refuses them) and a window of
// width x height CSS pixels.
func Start(path string, width, height int) (*Browser, error) {
	profile, err := os.MkdirTemp("", "replaycheck-chromium-")
	if err != nil {
		return nil, err
	}
	toBrowser, send, err := os.Pipe()
	if err != nil {
		os.RemoveAll(profile)
		return nil, err
	}
	recv, fromBrowser, err := os.Pipe()
	if err != nil {
		os.RemoveAll(profile)
		toBrowser.Close()
		send.Close()
		return nil, err
	}
	b := &Browser{profile: profile, send: send, recv: recv, msgs: make(chan message, 256)}
	b.cmd = exec.Command(path,
		"--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
		"--user-data-dir="+profile, "--no-first-run", "--no-default-browser-check",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-quic", "--disable-extensions", "--hide-scrollbars", "--mute-audio",
		fmt.Sprintf("--window-size=%d,%d", width, height), "about:blank")
	b.cmd.ExtraFiles = []*os.File{toBrowser, fromBrowser} // fds 3 and 4
	b.cmd.Stderr = &b.stderr
	err = b.cmd.Start()
	toBrowser.Close()
	fromBrowser.Close()
	if err != nil {
		send.Close()
		recv.Close()
		os.RemoveAll(profile)
		return nil, fmt.Errorf("starting %s: %w", path, err)
	}
	go b.read()
	return b, nil
}

// read turns the browser's NUL-ended messages into b.msgs until the pipe closes.
func (b *Browser) read() {
	defer close(b.msgs)
	r := bufio.NewReaderSize(b.recv, 1<<20)
	for {
		raw, err := r.ReadBytes(0)
		if err != nil {
			return
		}
		var m message
		if json.Unmarshal(raw[:len(raw)-1], &m) == nil {
			b.msgs <- m
		}
	}
}

// Close ends the browser and removes its profile.
func (b *Browser) Close() error {
	b.send.Close() // the browser exits when its request pipe closes
	done := make(chan error, 1)
	go func() { done <- b.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = b.cmd.Process.Kill()
		<-done
	}
	b.recv.Close()
	return os.RemoveAll(b.profile)
}

// call sends method with params (to a page's session when session is set) and waits for its
// reply, handing every event that arrives meanwhile to on (nil: dropped).
func (b *Browser) call(session, method string, params any, result any, on func(message)) error {
	b.mu.Lock()
	b.next++
	id := b.next
	req := map[string]any{"id": id, "method": method}
	if params != nil {
		req["params"] = params
	}
	if session != "" {
		req["sessionId"] = session
	}
	data, err := json.Marshal(req)
	if err == nil {
		_, err = b.send.Write(append(data, 0))
	}
	b.mu.Unlock()
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	m, err := b.wait(func(m message) bool { return m.ID == id }, on)
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	if m.Error != nil {
		return fmt.Errorf("%s: %s (code %d)", method, m.Error.Message, m.Error.Code)
	}
	if result != nil {
		return json.Unmarshal(m.Result, result)
	}
	return nil
}

// wait reads messages until one satisfies want, handing the others to on.
func (b *Browser) wait(want func(message) bool, on func(message)) (message, error) {
	timer := time.NewTimer(Timeout)
	defer timer.Stop()
	for {
		select {
		case m, ok := <-b.msgs:
			if !ok {
				return message{}, fmt.Errorf("the browser closed its pipe: %s", lastLines(b.stderr.String(), 5))
			}
			if want(m) {
				return m, nil
			}
			if on != nil {
				on(m)
			}
		case <-timer.C:
			return message{}, fmt.Errorf("no answer in %v", Timeout)
		}
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// Page is one tab with a loaded page.
type Page struct {
	b       *Browser
	session string
	// Problems are what the page and the browser complained about while it loaded and since:
	// console errors and assertions, uncaught exceptions, error entries of the browser's log (a
	// resource that failed to load, a blocked request), one line each.
	Problems []string
}

// Open opens a new tab, loads file (a local path) in it and waits for its load event.
func (b *Browser) Open(file string) (*Page, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, err
	}
	var target struct {
		TargetID string `json:"targetId"`
	}
	if err := b.call("", "Target.createTarget", map[string]any{"url": "about:blank"}, &target, nil); err != nil {
		return nil, err
	}
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	if err := b.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached, nil); err != nil {
		return nil, err
	}
	p := &Page{b: b, session: attached.SessionID}
	for _, domain := range []string{"Page.enable", "Runtime.enable", "Log.enable"} {
		if err := p.call(domain, nil, nil); err != nil {
			return nil, err
		}
	}
	var nav struct {
		ErrorText string `json:"errorText"`
	}
	if err := p.call("Page.navigate", map[string]any{"url": "file://" + abs}, &nav); err != nil {
		return nil, err
	}
	if nav.ErrorText != "" {
		return nil, fmt.Errorf("loading %s: %s", abs, nav.ErrorText)
	}
	if _, err := b.wait(func(m message) bool {
		return m.SessionID == p.session && m.Method == "Page.loadEventFired"
	}, p.note); err != nil {
		return nil, fmt.Errorf("loading %s: %w", abs, err)
	}
	return p, nil
}

func (p *Page) call(method string, params, result any) error {
	return p.b.call(p.session, method, params, result, p.note)
}

// note records a complaint among the events of p's session.
func (p *Page) note(m message) {
	if m.SessionID != p.session {
		return
	}
	switch m.Method {
	case "Runtime.consoleAPICalled":
		var ev struct {
			Type string `json:"type"`
			Args []struct {
				Value       any    `json:"value"`
				Description string `json:"description"`
			} `json:"args"`
		}
		if json.Unmarshal(m.Params, &ev) == nil && (ev.Type == "error" || ev.Type == "assert") {
			var parts []string
			for _, a := range ev.Args {
				if a.Value != nil {
					parts = append(parts, fmt.Sprint(a.Value))
				} else {
					parts = append(parts, a.Description)
				}
			}
			p.Problems = append(p.Problems, "console."+ev.Type+": "+strings.Join(parts, " "))
		}
	case "Runtime.exceptionThrown":
		var ev struct {
			Details struct {
				Text      string `json:"text"`
				Exception struct {
					Description string `json:"description"`
				} `json:"exception"`
			} `json:"exceptionDetails"`
		}
		if json.Unmarshal(m.Params, &ev) == nil {
			p.Problems = append(p.Problems, "exception: "+ev.Details.Text+" "+ev.Details.Exception.Description)
		}
	case "Log.entryAdded":
		var ev struct {
			Entry struct {
				Level, Source, Text, URL string
			} `json:"entry"`
		}
		if json.Unmarshal(m.Params, &ev) == nil && ev.Entry.Level == "error" {
			p.Problems = append(p.Problems, fmt.Sprintf("log (%s): %s %s", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL))
		}
	}
}

// Eval evaluates expression in the page and decodes its value (JSON-serialisable) into out.
func (p *Page) Eval(expression string, out any) error {
	var res struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		Exception *struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	err := p.call("Runtime.evaluate", map[string]any{"expression": expression, "returnByValue": true}, &res)
	if err != nil {
		return err
	}
	if res.Exception != nil {
		return fmt.Errorf("evaluating %q: %s", expression, res.Exception.Text)
	}
	if len(res.Result.Value) == 0 {
		return errors.New("evaluating " + expression + ": no value")
	}
	return json.Unmarshal(res.Result.Value, out)
}

// Screenshot returns a PNG of the page from its top, as wide as its content and at most
// maxHeight CSS pixels high.
func (p *Page) Screenshot(maxHeight int) ([]byte, error) {
	var size struct {
		Width  float64 `json:"w"`
		Height float64 `json:"h"`
	}
	if err := p.Eval(`({w: document.documentElement.scrollWidth, h: document.documentElement.scrollHeight})`, &size); err != nil {
		return nil, err
	}
	h := min(size.Height, float64(maxHeight))
	var shot struct {
		Data string `json:"data"`
	}
	err := p.call("Page.captureScreenshot", map[string]any{
		"format": "png", "captureBeyondViewport": true,
		"clip": map[string]any{"x": 0, "y": 0, "width": size.Width, "height": h, "scale": 1},
	}, &shot)
	if err != nil {
		return nil, err
	}
	return base64.StdEncoding.DecodeString(shot.Data)
}
