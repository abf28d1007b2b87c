// Tags of the S3 origin: kept by the origin itself, with minio-go's
// tagging calls.
package s3

import (
	"context"
	"fmt"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/tags"

	"github.com/granary-dev/granary/store"
)

var _ store.Tagger = (*Origin)(nil)

// ObjectTags returns the tags of bucket/key.
func (o *Origin) ObjectTags(ctx context.Context, bucket, key string) (map[string]string, error) {
	if err := checkNames(bucket, key); err != nil {
		return nil, err
	}
	t, err := o.core.GetObjectTagging(ctx, bucket, key, minio.GetObjectTaggingOptions{})
	if err != nil {
		return nil, wrap(ctx, "get tags", bucket, key, err)
	}
	return t.ToMap(), nil
}

// SetObjectTags replaces the tags of bucket/key; none removes them.
func (o *Origin) SetObjectTags(ctx context.Context, bucket, key string, m map[string]string) error {
	if err := checkNames(bucket, key); err != nil {
		return err
	}
	if len(m) == 0 {
		err := o.core.RemoveObjectTagging(ctx, bucket, key, minio.RemoveObjectTaggingOptions{})
		return wrap(ctx, "remove tags", bucket, key, err)
	}
	t, err := tags.NewTags(m, true)
	if err != nil {
		return fmt.Errorf("s3: tags of %s/%s: %w", bucket, key, err)
	}
	err = o.core.PutObjectTagging(ctx, bucket, key, t, minio.PutObjectTaggingOptions{})
	return wrap(ctx, "put tags", bucket, key, err)
}

// BucketTags returns the tags of bucket, nil if it has none.
func (o *Origin) BucketTags(ctx context.Context, bucket string) (map[string]string, error) {
	t, err := o.core.GetBucketTagging(ctx, bucket)
	if minio.ToErrorResponse(err).Code == "NoSuchTagSet" {
		// MinIO answers so for a missing bucket too.
		return nil, o.StatBucket(ctx, bucket)
	}
	if err != nil {
		return nil, wrap(ctx, "get bucket tags", bucket, "", err)
	}
	return t.ToMap(), nil
}

// SetBucketTags replaces the tags of bucket; none removes them.
func (o *Origin) SetBucketTags(ctx context.Context, bucket string, m map[string]string) error {
	if len(m) == 0 {
		return wrap(ctx, "remove bucket tags", bucket, "", o.core.RemoveBucketTagging(ctx, bucket))
	}
	t, err := tags.NewTags(m, false)
	if err != nil {
		return fmt.Errorf("s3: tags of bucket %s: %w", bucket, err)
	}
	return wrap(ctx, "put bucket tags", bucket, "", o.core.SetBucketTagging(ctx, bucket, t))
}
