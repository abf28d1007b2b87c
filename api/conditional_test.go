// Conditional header evaluation, precedence included.
package api

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/granary-dev/granary/api/s3err"
	"github.com/granary-dev/granary/store"
)

func TestConditions(t *testing.T) {
	mod := time.Date(2024, 5, 1, 12, 0, 0, 500, time.UTC)
	info := store.ObjectInfo{ETag: "abc", LastModified: mod}
	at := func(d time.Duration) string { return mod.Add(d).Format(http.TimeFormat) }
	const ok, notMod, failed = 0, 304, 412
	cases := []struct {
		headers map[string]string
		want    int
	}{
		{map[string]string{}, ok},
		{map[string]string{"If-Match": `"abc"`}, ok},
		{map[string]string{"If-Match": `W/"abc"`}, ok},
		{map[string]string{"If-Match": `"x", "abc"`}, ok},
		{map[string]string{"If-Match": `abc`}, ok},
		{map[string]string{"If-Match": `"x"`}, failed},
		{map[string]string{"If-None-Match": `"abc"`}, notMod},
		{map[string]string{"If-None-Match": `*`}, notMod},
		{map[string]string{"If-None-Match": `"x"`}, ok},
		{map[string]string{"If-Modified-Since": at(0)}, notMod}, // same second
		{map[string]string{"If-Modified-Since": at(-time.Second)}, ok},
		{map[string]string{"If-Unmodified-Since": at(0)}, ok},
		{map[string]string{"If-Unmodified-Since": at(-time.Second)}, failed},
		{map[string]string{"If-Match": `"abc"`, "If-Unmodified-Since": at(-time.Hour)}, ok},
		{map[string]string{"If-None-Match": `"abc"`, "If-Modified-Since": at(-time.Hour)}, notMod},
		{map[string]string{"If-None-Match": `"x"`, "If-Modified-Since": at(time.Hour)}, ok},
		{map[string]string{"If-Match": `"x"`, "If-None-Match": `"abc"`}, failed},
		{map[string]string{"If-Modified-Since": "garbage"}, ok},
	}
	for _, c := range cases {
		var h fasthttp.RequestHeader
		for k, v := range c.headers {
			h.Set(k, v)
		}
		cond, present := parseConditions(&h, getConditions)
		if present != (len(c.headers) > 0 && c.headers["If-Modified-Since"] != "garbage") {
			t.Errorf("%v: present = %v", c.headers, present)
		}
		err := cond.check(info)
		got := ok
		var se *s3err.Error
		switch {
		case errors.Is(err, errNotModified):
			got = notMod
		case errors.As(err, &se) && se.Code == s3err.PreconditionFailed:
			got = failed
		case err != nil:
			t.Errorf("%v: unexpected %v", c.headers, err)
		}
		if got != c.want {
			t.Errorf("%v: %d, want %d", c.headers, got, c.want)
		}
	}
}
