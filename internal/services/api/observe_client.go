package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
)

// WatchPods calls fn with every watch event until ctx is done (nil) or the
// stream or fn fails.
func (c *Client) WatchPods(ctx context.Context, fn func(WatchEvent) error) error {
	return c.stream(ctx, "/v1/pods?watch=true", watchEvents(fn))
}

// WatchPodsSynced is WatchPods with the initial-events-end bookmark: fn
// gets the ADDED events of the pods as they are, then one WatchBookmark
// event (the watch is in sync), then every change.
// A daemon that does not send the bookmark (an older podhost, still
// running after an upgrade) is ErrNoBookmark, before any event.
func (c *Client) WatchPodsSynced(ctx context.Context, fn func(WatchEvent) error) error {
	resp, err := c.get(ctx, "/v1/pods?watch=true&sendInitialEvents=true")
	if err != nil {
		return err
	}
	if resp.Header.Get(InitialEventsHeader) != "true" {
		resp.Body.Close()
		return ErrNoBookmark
	}
	return c.decodeStream(ctx, resp, watchEvents(fn))
}

// ErrWatchClosed: the daemon ended a watch (it is stopping).
var ErrWatchClosed = errors.New("watch closed by the daemon")

// ErrNoBookmark: the daemon's watch has no initial-events-end bookmark.
var ErrNoBookmark = errors.New("the daemon's watch does not mark the end of its initial events (an older podhost)")

func watchEvents(fn func(WatchEvent) error) func(*json.Decoder) error {
	return func(d *json.Decoder) error {
		var e WatchEvent
		if err := d.Decode(&e); err != nil {
			return err
		}
		return fn(e)
	}
}

// AllEvents returns the events of the pods in namespace ("" = all),
// only those of pod when it is given.
func (c *Client) AllEvents(ctx context.Context, namespace, pod string) ([]ObjectEvent, error) {
	var evs []ObjectEvent
	return evs, c.getJSON(ctx, "/v1/events?"+eventQuery(namespace, pod).Encode(), &evs)
}

// WatchEvents calls fn with the existing events, then each new one, until
// ctx is done (nil) or the stream or fn fails.
func (c *Client) WatchEvents(ctx context.Context, namespace, pod string, fn func(ObjectEvent) error) error {
	q := eventQuery(namespace, pod)
	q.Set("watch", "true")
	return c.stream(ctx, "/v1/events?"+q.Encode(), func(d *json.Decoder) error {
		var e ObjectEvent
		if err := d.Decode(&e); err != nil {
			return err
		}
		return fn(e)
	})
}

// Top returns the pods' usage sampled over window ("" = the server's).
func (c *Client) Top(ctx context.Context, namespace, window string) ([]PodMetrics, error) {
	q := url.Values{}
	if namespace != "" {
		q.Set("namespace", namespace)
	}
	if window != "" {
		q.Set("window", window)
	}
	var pm []PodMetrics
	return pm, c.getJSON(ctx, "/v1/top?"+q.Encode(), &pm)
}

func eventQuery(namespace, pod string) url.Values {
	q := url.Values{}
	if namespace != "" {
		q.Set("namespace", namespace)
	}
	if pod != "" {
		q.Set("pod", pod)
	}
	return q
}

func (c *Client) stream(ctx context.Context, path string, next func(*json.Decoder) error) error {
	resp, err := c.get(ctx, path)
	if err != nil {
		return err
	}
	return c.decodeStream(ctx, resp, next)
}

func (c *Client) decodeStream(ctx context.Context, resp *http.Response, next func(*json.Decoder) error) error {
	defer resp.Body.Close()
	d := json.NewDecoder(resp.Body)
	for {
		err := next(d)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, io.EOF):
			return ErrWatchClosed
		case err != nil:
			return err
		}
	}
}
