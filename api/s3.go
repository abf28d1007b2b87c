// The S3 face: a request's bucket and key (path or virtual-host style),
// its route (router.go's table), its signature and policy, then its
// handler. It answers every path no other face claims.
package api

import (
	"errors"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/granary-dev/granary/access"
	"github.com/granary-dev/granary/api/s3err"
	"github.com/granary-dev/granary/api/sigv4"
	"github.com/granary-dev/granary/gateway"
)

// S3Options configure the S3 face. Engine and Access are required.
type S3Options struct {
	Engine *gateway.Engine
	// Access holds the access keys, their policies and the anonymous
	// policy; it may change its users while the server runs.
	Access *access.Registry
	// Region is reported by GetBucketLocation, and a request's credential
	// scope must name it (a signature for another region is refused with
	// AWS's error, which names this one); "" means us-east-1.
	Region string
	// Domains enable virtual-host style: a Host of "BUCKET.DOMAIN[:port]"
	// addresses BUCKET. Path style always works.
	Domains []string
}

// normalize checks o and fills in its defaults.
func (o S3Options) normalize() (S3Options, error) {
	if o.Engine == nil || o.Access == nil {
		return o, errors.New("api: Engine and Access are required")
	}
	o.Region = regionOr(o.Region)
	domains := make([]string, 0, len(o.Domains))
	for _, d := range o.Domains {
		d = strings.ToLower(strings.Trim(strings.TrimSpace(d), "."))
		if d != "" {
			domains = append(domains, d)
		}
	}
	o.Domains = domains
	return o, nil
}

// regionOr is region, or DefaultRegion if it is "".
func regionOr(region string) string {
	if region == "" {
		return DefaultRegion
	}
	return region
}

// S3 is the S3 face. Its handlers are methods of its views buckets,
// objects and uploads (router.go). The admin API verifies its calls with
// this face's keys (authenticate).
type S3 struct {
	*core
	opts     S3Options
	engine   *gateway.Engine
	access   *access.Registry
	verifier *sigv4.Verifier
	routes   *routeTable
	// domainSuffixes are "." + each domain, for virtual-host matching.
	domainSuffixes []string
}

// NewS3 returns the S3 face of o.
func NewS3(o S3Options) (*S3, error) {
	o, err := o.normalize()
	if err != nil {
		return nil, err
	}
	s := &S3{
		opts:     o,
		engine:   o.Engine,
		access:   o.Access,
		verifier: &sigv4.Verifier{Creds: o.Access, Region: o.Region},
		routes:   newRouteTable(),
	}
	for _, d := range o.Domains {
		s.domainSuffixes = append(s.domainSuffixes, "."+d)
	}
	return s, nil
}

func (s *S3) mount(c *core) { s.core = c }

// serve routes, authenticates and validates r, then runs its handler.
// Authentication comes before validation, so an unsigned request learns
// nothing about names.
func (s *S3) serve(c *fiber.Ctx, r *request) error {
	bucket, key, targetErr := splitTarget(string(c.Request().Header.Host()), c.Request().URI().PathOriginal(), s.domainSuffixes)
	r.bucket, r.key = bucket, key
	res := resService
	switch {
	case bucket == "" && key == "":
	case key == "":
		res = resBucket
	default:
		res = resObject
	}
	rt := s.routes.resolve(c, res)
	r.op = rt.op
	if targetErr != nil {
		r.op = opUnknown
	}
	if res != resService && targetErr == nil && c.Request().Header.IsOptions() {
		r.op = opPreflight
		return preflight(c)
	}

	if targetErr == nil && s.mayAnonymously(c, r.op, bucket, key) {
		r.policy = s.access.Anonymous()
	} else {
		auth, err := s.authenticate(c, r)
		if err != nil {
			return err
		}
		r.auth, r.policy = auth, s.access.Policy(auth.AccessKey)
	}
	if targetErr != nil {
		return targetErr
	}
	if err := s.authorize(c, r); err != nil {
		return err
	}
	if r.tooLarge { // no S3 PUT takes such a body: refused before it is sent
		return s3err.New(s3err.EntityTooLarge, "")
	}
	if res != resService {
		if err := checkBucket(bucket); err != nil {
			return err
		}
	}
	if res == resObject {
		if err := checkKey(key); err != nil {
			return err
		}
	}
	return rt.h(s, c, r)
}

// preflight answers a CORS preflight (OPTIONS on a bucket or object), which
// browsers send without credentials, so it is answered before any
// authentication, as S3 does: Granary serves no CORS configuration, so
// one with its Origin and Access-Control-Request-Method is refused 403
// AccessForbidden, and one without them is a bad request (400).
func preflight(c *fiber.Ctx) error {
	h := &c.Request().Header
	switch {
	case len(h.Peek("Origin")) == 0:
		return s3err.New(s3err.BadRequest, "")
	case len(h.Peek("Access-Control-Request-Method")) == 0:
		return s3err.New(s3err.BadRequest, "Insufficient information. Access-Control-Request-Method header needed.")
	}
	return s3err.New(s3err.AccessForbidden, "")
}
