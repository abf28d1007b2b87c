// The origin suite's tagging and metadata-fidelity cases: object tags set
// with a put, a copy or a multipart upload and replaced or removed on
// their own; bucket tags; Expires and empty user metadata values kept.
package storetest

import (
	"bytes"
	"errors"
	"maps"
	"testing"

	"github.com/granary-dev/granary/store"
)

func testTags(t *testing.T, o store.Origin) {
	tg, ok := o.(store.Tagger)
	if !ok {
		t.Fatal("origin does not implement store.Tagger: tags would be lost")
	}
	ctx := opCtx(t)
	b := newBucket(t, o)
	tags := map[string]string{"project": "granary", "stage": "raw data"}
	putBytes(t, o, b, "obj", []byte("tagged"), store.ObjectMeta{Tags: tags})
	if st := mustStat(t, o, b, "obj"); st.NumTags() != 2 {
		t.Fatalf("Stat after a tagged put: %d tags, want 2", st.NumTags())
	}
	wantTags(t, tg, b, "obj", tags)

	next := map[string]string{"only": "one"}
	if err := tg.SetObjectTags(ctx, b, "obj", next); err != nil {
		t.Fatal(err)
	}
	wantTags(t, tg, b, "obj", next)
	st := mustStat(t, o, b, "obj")
	if st.NumTags() != 1 || st.Size != 6 {
		t.Fatalf("Stat after SetObjectTags: %d tags, size %d", st.NumTags(), st.Size)
	}
	if got, _ := getBytes(t, o, b, "obj", store.ReadRange{Length: -1}); !bytes.Equal(got, []byte("tagged")) {
		t.Fatalf("SetObjectTags changed the bytes: %q", got)
	}
	if c, ok := o.(store.Copier); ok {
		if _, err := c.Copy(ctx, b, "obj", b, "copy-kept", nil); err != nil {
			t.Fatal(err)
		}
		wantTags(t, tg, b, "copy-kept", next)
		repl := store.ObjectMeta{Tags: map[string]string{"copied": "yes"}}
		if _, err := c.Copy(ctx, b, "obj", b, "copy-replaced", &repl); err != nil {
			t.Fatal(err)
		}
		wantTags(t, tg, b, "copy-replaced", repl.Tags)
	}
	if err := tg.SetObjectTags(ctx, b, "obj", nil); err != nil {
		t.Fatal(err)
	}
	wantTags(t, tg, b, "obj", map[string]string{})
	if st := mustStat(t, o, b, "obj"); st.NumTags() != 0 {
		t.Fatalf("Stat after removing the tags: %d tags", st.NumTags())
	}
	if _, err := tg.ObjectTags(ctx, b, "absent"); !errors.Is(err, store.ErrNoSuchKey) {
		t.Fatalf("ObjectTags(missing) = %v, want ErrNoSuchKey", err)
	}
	if err := tg.SetObjectTags(ctx, b, "absent", next); !errors.Is(err, store.ErrNoSuchKey) {
		t.Fatalf("SetObjectTags(missing) = %v, want ErrNoSuchKey", err)
	}
	testBucketTags(t, tg, b)
}

func testBucketTags(t *testing.T, tg store.Tagger, b string) {
	ctx := opCtx(t)
	if got, err := tg.BucketTags(ctx, b); err != nil || got != nil {
		t.Fatalf("BucketTags(untagged) = %v, %v; want nil, nil", got, err)
	}
	tags := map[string]string{"team": "ml", "cost-center": "42"}
	if err := tg.SetBucketTags(ctx, b, tags); err != nil {
		t.Fatal(err)
	}
	if got, err := tg.BucketTags(ctx, b); err != nil || !maps.Equal(got, tags) {
		t.Fatalf("BucketTags = %v, %v; want %v", got, err, tags)
	}
	if err := tg.SetBucketTags(ctx, b, nil); err != nil {
		t.Fatal(err)
	}
	if got, err := tg.BucketTags(ctx, b); err != nil || got != nil {
		t.Fatalf("BucketTags after removal = %v, %v; want nil, nil", got, err)
	}
	if _, err := tg.BucketTags(ctx, "st-no-such-bucket-t1"); !errors.Is(err, store.ErrNoSuchBucket) {
		t.Fatalf("BucketTags(missing bucket) = %v, want ErrNoSuchBucket", err)
	}
}

func wantTags(t *testing.T, tg store.Tagger, b, key string, want map[string]string) {
	t.Helper()
	got, err := tg.ObjectTags(opCtx(t), b, key)
	if err != nil || got == nil || !maps.Equal(got, want) {
		t.Fatalf("ObjectTags(%s) = %v, %v; want %v", key, got, err, want)
	}
}

// testMetaFidelity: Expires and an empty x-amz-meta-* value come back as
// they were put.
func testMetaFidelity(t *testing.T, o store.Origin) {
	b := newBucket(t, o)
	meta := store.ObjectMeta{Expires: "Wed, 21 Oct 2037 07:28:00 GMT", User: map[string]string{"empty": "", "full": "x"}}
	putBytes(t, o, b, "obj", []byte("meta"), meta)
	st := mustStat(t, o, b, "obj")
	if st.Expires != meta.Expires || !maps.Equal(st.User, meta.User) {
		t.Fatalf("Stat: Expires %q, user %v; want %q, %v", st.Expires, st.User, meta.Expires, meta.User)
	}
}
