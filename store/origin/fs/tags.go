// Tags of the directory origin: an object's tags live in its sidecar with
// the rest of its metadata; a bucket's in a file beside its sidecars
// (Root/.granary/meta/<bucket>/tags.json), which goes with the bucket.
package fs

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path"

	"github.com/granary-dev/granary/store"
)

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

// SetObjectTags replaces the tags of bucket/key by rewriting its sidecar
// under the key's commit lock, so a concurrent Put either precedes it
// (and gets the tags) or follows it (and replaces them, as S3's would).
// A file without a sidecar gets one describing it as it is.
func (o *Origin) SetObjectTags(ctx context.Context, bucket, key string, tags map[string]string) error {
	br, err := o.openKey(bucket, key)
	if err != nil {
		return err
	}
	defer br.Close()
	defer o.lockCommit(bucket, key)()
	var sc *sidecar
	if isFolderKey(key) {
		info, err := o.folderInfo(br, bucket, key)
		if err != nil {
			return err
		}
		sc = o.readSidecar(bucket, key)
		sc.ETag = info.ETag
	} else {
		fi, err := br.Stat(key)
		if err != nil {
			return keyError(err, bucket, key)
		}
		if !fi.Mode().IsRegular() {
			return noSuchKey(bucket, key)
		}
		info := o.fileInfo(bucket, key, fi, true)
		sc = newSidecar(key, fi.Size(), fi.ModTime(), info.ETag, info.ObjectMeta)
	}
	sc.Tags = nil
	if len(tags) > 0 {
		sc.Tags = maps.Clone(tags)
	}
	staged, err := o.stageSidecar(sc)
	if err != nil {
		return err
	}
	defer o.root.Remove(staged) // no-op once renamed
	return o.publishSidecar(staged, bucket, key)
}

// bucketTagsPath names the tags file of bucket. It cannot collide with a
// sidecar directory (two hex digits).
func bucketTagsPath(bucket string) string { return metaDir + "/" + bucket + "/tags.json" }

// BucketTags returns the tags of bucket, nil if it has none.
func (o *Origin) BucketTags(ctx context.Context, bucket string) (map[string]string, error) {
	if err := o.StatBucket(ctx, bucket); err != nil {
		return nil, err
	}
	data, err := o.root.ReadFile(bucketTagsPath(bucket))
	if isNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("fs: read bucket tags: %w", err)
	}
	var tags map[string]string
	if err := json.Unmarshal(data, &tags); err != nil {
		return nil, fmt.Errorf("fs: decode bucket tags of %s: %w", bucket, err)
	}
	return tags, nil
}

// SetBucketTags replaces the tags of bucket (none: removes them),
// published atomically.
func (o *Origin) SetBucketTags(ctx context.Context, bucket string, tags map[string]string) error {
	o.bucketMu.RLock() // RemoveBucket waits for it
	defer o.bucketMu.RUnlock()
	if err := o.StatBucket(ctx, bucket); err != nil {
		return err
	}
	dst := bucketTagsPath(bucket)
	if len(tags) == 0 {
		if err := o.root.Remove(dst); err != nil && !isNotFound(err) {
			return fmt.Errorf("fs: remove bucket tags: %w", err)
		}
		return nil
	}
	data, err := json.Marshal(tags)
	if err != nil {
		return fmt.Errorf("fs: encode bucket tags: %w", err)
	}
	f, name, err := o.createTemp("tags")
	if err != nil {
		return err
	}
	defer o.root.Remove(name) // no-op once renamed
	_, err = f.Write(data)
	if err == nil && !o.noSync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = o.root.MkdirAll(path.Dir(dst), o.dirPerm)
	}
	if err == nil {
		err = o.root.Rename(name, dst)
	}
	if err != nil {
		return fmt.Errorf("fs: write bucket tags: %w", err)
	}
	return o.syncDir(path.Dir(dst))
}
