// Tags of the HDFS origin: an object's tags live in its metadata record
// (the user.granary.meta extended attribute) with the rest of its
// metadata; a bucket's in an extended attribute of a reserved marker file
// in its directory. Like
// the rest of the metadata, they are not kept by a namenode without
// extended attributes.
package hdfs

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"

	"github.com/granary-dev/granary/store"
)

// tagsXAttr is the extended attribute of a bucket's tags marker holding
// its tags as a JSON object.
const tagsXAttr = "user.granary.tags"

var _ store.Tagger = (*Origin)(nil)

// ObjectTags returns the tags of bucket/key.
func (o *Origin) ObjectTags(ctx context.Context, bucket, key string) (map[string]string, error) {
	info, err := o.Stat(ctx, bucket, key)
	if err != nil {
		return nil, err
	}
	if info.Tags == nil {
		return map[string]string{}, nil
	}
	return info.Tags, nil
}

// SetObjectTags replaces the tags in the object's record. Setting an
// extended attribute leaves the file's size, mtime and ID, and so its
// version ETag, as they were.
func (o *Origin) SetObjectTags(ctx context.Context, bucket, key string, tags map[string]string) error {
	if _, err := o.statFile(ctx, bucket, key); err != nil {
		return err
	}
	p := o.objectPath(bucket, key)
	rec, err := o.readRecord(p)
	if err != nil {
		return wrap("get tags", bucket, key, err, nil)
	}
	if rec == nil {
		rec = &record{}
	}
	rec.Meta.Tags = nil
	if len(tags) > 0 {
		rec.Meta.Tags = maps.Clone(tags)
	}
	if err := o.writeRecord(p, rec); err != nil {
		return wrap("put tags", bucket, key, err, nil)
	}
	return nil
}

// bucketTagsPath is the marker file whose tagsXAttr holds a bucket's
// tags (a reserved name: never a key, never listed, removed with the
// bucket).
func (o *Origin) bucketTagsPath(bucket string) string {
	return o.bucketPath(bucket) + "/" + reservedPrefix + "tags"
}

// BucketTags returns the tags of bucket, nil if it has none.
func (o *Origin) BucketTags(ctx context.Context, bucket string) (map[string]string, error) {
	if err := o.StatBucket(ctx, bucket); err != nil || o.noXAttrs.Load() {
		return nil, err
	}
	attrs, err := o.cl().ListXAttrs(o.bucketTagsPath(bucket))
	if err != nil && errors.Is(translate(err, nil), store.ErrNoSuchKey) {
		return nil, nil // no marker: never tagged
	}
	if err != nil {
		return nil, wrap("get bucket tags", bucket, "", err, nil)
	}
	v, ok := attrs[tagsXAttr]
	if !ok || v == "" {
		return nil, nil
	}
	var tags map[string]string
	if err := json.Unmarshal([]byte(v), &tags); err != nil {
		return nil, nil // unreadable: as good as none
	}
	return tags, nil
}

// SetBucketTags replaces the tags of bucket; none removes them (and the
// marker).
func (o *Origin) SetBucketTags(ctx context.Context, bucket string, tags map[string]string) error {
	if err := o.StatBucket(ctx, bucket); err != nil || o.noXAttrs.Load() {
		return err
	}
	p := o.bucketTagsPath(bucket)
	if len(tags) == 0 {
		if err := o.cl().Remove(p); err != nil && !errors.Is(translate(err, nil), store.ErrNoSuchKey) {
			return wrap("remove bucket tags", bucket, "", err, nil)
		}
		return nil
	}
	err := o.cl().CreateEmptyFile(p)
	if err != nil && !errors.Is(err, os.ErrExist) {
		return wrap("put bucket tags", bucket, "", err, nil)
	}
	v, _ := json.Marshal(tags) // a map of strings always encodes
	if err := o.cl().SetXAttr(p, tagsXAttr, string(v)); err != nil {
		return wrap("put bucket tags", bucket, "", err, nil)
	}
	return nil
}
