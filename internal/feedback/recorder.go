package feedback

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentwarden/warden/loop"
)

// Recorder stores the records of many sessions' Sinks in a Store, in
// batches, from one goroutine of its own: a Sink's Emit only queues its
// record, so the loop never waits for the database.
//
// A record that cannot be stored is lost, never silently: it is counted
// (Stats), logged, and its error is kept (Err, and its Sink's Err). That
// happens when the queue is full (the store is slower than the calls, or
// down), when the store refuses or times out on the record's batch, and
// when the record comes after Close. A full queue drops the record rather
// than making Emit wait: the loop's Sink contract is that Emit does not
// block for long, and waiting would slow every session to the pace of the
// database, or stop them all while it is down.
//
// Close stores what is queued and stops the goroutine: close the Recorder
// after the runs that emit to its Sinks have ended, and before the Store.
type Recorder struct {
	st  Store
	o   RecorderOptions
	log *slog.Logger

	mu     sync.RWMutex // guards closed; held to queue a record
	closed bool
	q      chan entry
	quit   chan struct{} // closed by Close
	done   chan struct{} // closed when the goroutine returns

	written, lost atomic.Int64
	errMu         sync.Mutex
	err           error
}

// entry is a queued record with the Sink it came from, or a Flush mark.
type entry struct {
	rec   Record
	sink  *Sink
	flush chan struct{}
}

// RecorderOptions configure a Recorder. Start from
// DefaultRecorderOptions; every limit must be positive.
type RecorderOptions struct {
	// Queue is how many records may wait for the store.
	Queue int
	// Batch is the most records stored by one AddFeedback call.
	Batch int
	// WriteTimeout bounds one AddFeedback call.
	WriteTimeout time.Duration
	// Now stamps the records; nil means time.Now.
	Now func() time.Time
	// Logger gets a line for every loss; nil discards them (they are
	// still counted).
	Logger *slog.Logger
}

// DefaultRecorderOptions returns the limits warden serve uses: a queue of
// 4096 records (a burst of several hundred sessions' calls), batches of
// 100, and 10 s per batch.
func DefaultRecorderOptions() RecorderOptions {
	return RecorderOptions{Queue: 4096, Batch: 100, WriteTimeout: 10 * time.Second}
}

// Stats counts a Recorder's records so far.
type Stats struct {
	// Written were stored; Lost were not (see Recorder).
	Written int64 `json:"written"`
	Lost    int64 `json:"lost"`
}

// NewRecorder starts a Recorder storing into st.
func NewRecorder(st Store, o RecorderOptions) (*Recorder, error) {
	switch {
	case st == nil:
		return nil, fmt.Errorf("feedback: recorder: %w: no store", ErrBadOptions)
	case o.Queue <= 0:
		return nil, fmt.Errorf("feedback: recorder: %w: queue %d", ErrBadOptions, o.Queue)
	case o.Batch <= 0:
		return nil, fmt.Errorf("feedback: recorder: %w: batch %d", ErrBadOptions, o.Batch)
	case o.WriteTimeout <= 0:
		return nil, fmt.Errorf("feedback: recorder: %w: write timeout %s", ErrBadOptions, o.WriteTimeout)
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Recorder{st: st, o: o, log: log, q: make(chan entry, o.Queue),
		quit: make(chan struct{}), done: make(chan struct{})}
	go r.run()
	return r, nil
}

// Sink returns the Sink of one session's events, recording them under its
// tenant and session id.
func (r *Recorder) Sink(tenant, session string) *Sink {
	return &Sink{Tenant: tenant, Session: session, Now: r.o.Now, rec: r,
		Digest: func(e loop.Event) string { return e.ArgsDigest }, Output: func(e loop.Event) string { return e.Input }}
}

// Err returns the first error that cost the Recorder a record, if any.
func (r *Recorder) Err() error {
	r.errMu.Lock()
	defer r.errMu.Unlock()
	return r.err
}

// Stats returns how many records were stored and lost so far.
func (r *Recorder) Stats() Stats {
	return Stats{Written: r.written.Load(), Lost: r.lost.Load()}
}

// Flush waits until every record queued before it has been stored or
// lost. It fails only when ctx ends first or the Recorder is closed; what
// the records came to is in Err and Stats.
func (r *Recorder) Flush(ctx context.Context) error {
	mark := make(chan struct{})
	r.mu.RLock()
	closed := r.closed
	r.mu.RUnlock()
	if closed {
		return fmt.Errorf("feedback: flush: %w", ErrClosed)
	}
	select {
	case r.q <- entry{flush: mark}:
	case <-r.done:
		return fmt.Errorf("feedback: flush: %w", ErrClosed)
	case <-ctx.Done():
		return fmt.Errorf("feedback: flush: %w", ctx.Err())
	}
	select {
	case <-mark:
		return nil
	case <-r.done:
		// The mark is closed before the goroutine returns, if it was seen.
		select {
		case <-mark:
			return nil
		default:
			return fmt.Errorf("feedback: flush: %w", ErrClosed)
		}
	case <-ctx.Done():
		return fmt.Errorf("feedback: flush: %w", ctx.Err())
	}
}

// Close stores the records queued so far and stops the Recorder; records
// that come later are lost (ErrClosed). It returns Err, or ctx's error if
// ctx ends first (the queued records are then still being stored).
func (r *Recorder) Close(ctx context.Context) error {
	r.mu.Lock()
	if !r.closed {
		r.closed = true
		close(r.quit)
	}
	r.mu.Unlock()
	select {
	case <-r.done:
		return r.Err()
	case <-ctx.Done():
		return fmt.Errorf("feedback: close: %w", ctx.Err())
	}
}

// enqueue queues rec from s without waiting.
func (r *Recorder) enqueue(s *Sink, rec Record) error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return fmt.Errorf("feedback: %w", ErrClosed)
	}
	select {
	case r.q <- entry{rec: rec, sink: s}:
		return nil
	default:
		return fmt.Errorf("feedback: %d records waiting: %w", r.o.Queue, ErrQueueFull)
	}
}

// lose counts and logs n lost records; tenant and session name them when
// they are of one session.
func (r *Recorder) lose(n int, err error, tenant, session string) {
	total := r.lost.Add(int64(n))
	r.errMu.Lock()
	if r.err == nil {
		r.err = err
	}
	r.errMu.Unlock()
	attrs := []any{"records", n, "lost_total", total, "error", err.Error()}
	if session != "" {
		attrs = append(attrs, "tenant", tenant, "session", session)
	}
	r.log.Error("feedback records lost", attrs...)
}

func (r *Recorder) run() {
	defer close(r.done)
	for {
		select {
		case e := <-r.q:
			r.drain(e)
		case <-r.quit:
			// Close holds mu while it closes quit, so nothing is queued
			// after this: store the rest and stop.
			for {
				select {
				case e := <-r.q:
					r.drain(e)
				default:
					return
				}
			}
		}
	}
}

// drain stores first and the records queued behind it, up to a batch.
func (r *Recorder) drain(first entry) {
	batch := []entry{first}
	n := 0
	if first.flush == nil {
		n++
	}
more:
	for n < r.o.Batch {
		select {
		case e := <-r.q:
			batch = append(batch, e)
			if e.flush == nil {
				n++
			}
		default:
			break more
		}
	}
	r.store(batch, n)
	for _, e := range batch {
		if e.flush != nil {
			close(e.flush)
		}
	}
}

// store stores the n records of batch in one call.
func (r *Recorder) store(batch []entry, n int) {
	if n == 0 {
		return
	}
	recs := make([]Record, 0, n)
	for _, e := range batch {
		if e.flush == nil {
			recs = append(recs, e.rec)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.o.WriteTimeout)
	err := r.st.AddFeedback(ctx, recs)
	cancel()
	if err == nil {
		r.written.Add(int64(n))
		return
	}
	err = fmt.Errorf("feedback: store %d records: %w", n, err)
	for _, e := range batch {
		if e.sink != nil {
			e.sink.fail(err)
		}
	}
	r.lose(n, err, "", "")
}
