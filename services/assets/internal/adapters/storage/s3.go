package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/customerapi/platform/services/assets/internal/domain"
)

// S3Config configures the S3-compatible backend.
type S3Config struct {
	// Endpoint is host[:port] of the service, e.g. s3.eu-central-1.amazonaws.com.
	Endpoint string
	Bucket   string
	Region   string
	// AccessKeyID and SecretAccessKey are static credentials; when both are empty the
	// standard chain is used (AWS_* variables, the credentials file, instance roles).
	AccessKeyID     string
	SecretAccessKey string
	// UseTLS selects https.
	UseTLS bool
	// PathStyle addresses buckets as endpoint/bucket (MinIO, most on-premises stores)
	// instead of bucket.endpoint.
	PathStyle bool
	// PartSize is the size of one part of a multipart upload (at least 5 MiB, the S3
	// minimum): the most an upload holds in memory.
	PartSize uint64
	// CreateBucket creates the bucket at start when it is missing.
	CreateBucket bool
}

// MinPartSize is the smallest part S3 accepts for all but the last part.
const MinPartSize = 5 << 20

// singlePutMax is the largest object sent in one PUT: a smaller one is read into memory
// whole (one round trip); anything larger goes as a multipart upload.
const singlePutMax = 1 << 20

// S3 stores objects in a bucket of an S3-compatible service.
type S3 struct {
	client   *minio.Client
	bucket   string
	partSize uint64
}

// NewS3 connects to the service and makes sure the bucket exists.
func NewS3(ctx context.Context, c S3Config) (*S3, error) {
	if c.PartSize < MinPartSize {
		c.PartSize = MinPartSize
	}
	creds := credentials.NewStaticV4(c.AccessKeyID, c.SecretAccessKey, "")
	if c.AccessKeyID == "" && c.SecretAccessKey == "" {
		creds = credentials.NewChainCredentials([]credentials.Provider{
			&credentials.EnvAWS{}, &credentials.FileAWSCredentials{}, &credentials.IAM{},
		})
	}
	lookup := minio.BucketLookupAuto
	if c.PathStyle {
		lookup = minio.BucketLookupPath
	}
	client, err := minio.New(c.Endpoint, &minio.Options{Creds: creds, Secure: c.UseTLS, Region: c.Region, BucketLookup: lookup})
	if err != nil {
		return nil, fmt.Errorf("storage: s3 client for %s: %w", c.Endpoint, err)
	}
	s := &S3{client: client, bucket: c.Bucket, partSize: c.PartSize}
	ok, err := client.BucketExists(ctx, c.Bucket)
	if err != nil {
		return nil, fmt.Errorf("storage: s3 bucket %s: %w", c.Bucket, err)
	}
	if !ok {
		if !c.CreateBucket {
			return nil, fmt.Errorf("storage: s3 bucket %s does not exist", c.Bucket)
		}
		if err := client.MakeBucket(ctx, c.Bucket, minio.MakeBucketOptions{Region: c.Region}); err != nil {
			return nil, fmt.Errorf("storage: create s3 bucket %s: %w", c.Bucket, err)
		}
	}
	return s, nil
}

// Put sends a small object in one PUT and a larger one as a multipart upload of
// PartSize parts, so memory stays bounded by one part whatever the object's size. A
// failed multipart upload is aborted, leaving nothing under key.
func (s *S3) Put(ctx context.Context, key string, r io.Reader, contentType string) (int64, error) {
	if err := ValidKey(key); err != nil {
		return 0, err
	}
	r = ctxReader{ctx, r}
	head := make([]byte, singlePutMax+1)
	n, err := io.ReadFull(r, head)
	// Unsigned payloads: over TLS that is what the client sends anyway, and it avoids the
	// chunk-signed encoding that some S3-compatible stores do not decode for parts.
	opts := minio.PutObjectOptions{ContentType: contentType, PartSize: s.partSize, DisableContentSha256: true}
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		if _, err := s.client.PutObject(ctx, s.bucket, key, bytes.NewReader(head[:n]), int64(n), opts); err != nil {
			return 0, fmt.Errorf("storage: put %s: %w", key, err)
		}
		return int64(n), nil
	case err != nil:
		return int64(n), fmt.Errorf("storage: read %s: %w", key, err)
	}
	info, err := s.client.PutObject(ctx, s.bucket, key, io.MultiReader(bytes.NewReader(head), r), -1, opts)
	if err != nil {
		return info.Size, fmt.Errorf("storage: put %s: %w", key, err)
	}
	return info.Size, nil
}

// Open issues a ranged GET.
func (s *S3) Open(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	if err := ValidKey(key); err != nil {
		return nil, err
	}
	opts := minio.GetObjectOptions{}
	switch {
	case length == 0:
		// S3 has no empty range; read one byte and hand back none.
		if err := opts.SetRange(offset, offset); err != nil {
			return nil, err
		}
	case length > 0:
		if err := opts.SetRange(offset, offset+length-1); err != nil {
			return nil, err
		}
	case offset > 0:
		if err := opts.SetRange(offset, 0); err != nil {
			return nil, err
		}
	}
	// Core's GET sends the ranged request at once (the high-level Object is a lazy
	// seeker that drops the range on Stat), so a missing key fails here.
	body, _, _, err := minio.Core{Client: s.client}.GetObject(ctx, s.bucket, key, opts)
	if err != nil {
		if minio.ToErrorResponse(err).Code == minio.NoSuchKey {
			return nil, domain.ErrObjectNotFound
		}
		return nil, fmt.Errorf("storage: get %s: %w", key, err)
	}
	if length == 0 {
		return readCloser{bytes.NewReader(nil), body}, nil
	}
	return body, nil
}

// Delete removes the object (S3 deletes are idempotent).
func (s *S3) Delete(ctx context.Context, key string) error {
	if err := ValidKey(key); err != nil {
		return err
	}
	if err := s.client.RemoveObject(ctx, s.bucket, key, minio.RemoveObjectOptions{}); err != nil {
		return fmt.Errorf("storage: delete %s: %w", key, err)
	}
	return nil
}

// Check asks for the bucket.
func (s *S3) Check(ctx context.Context) error {
	ok, err := s.client.BucketExists(ctx, s.bucket)
	if err != nil {
		return fmt.Errorf("storage: s3: %w", err)
	}
	if !ok {
		return fmt.Errorf("storage: s3 bucket %s is gone", s.bucket)
	}
	return nil
}
