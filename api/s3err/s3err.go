// Package s3err is the S3 error catalogue: every error code Granary answers
// with, its HTTP status and its description, and the XML body that carries it.
package s3err

import (
	"bytes"
	"encoding/xml"
	"errors"
	"net/http"
)

// Code is an S3 error code such as "NoSuchKey".
type Code string

// The codes Granary answers with.
const (
	AccessDenied                  Code = "AccessDenied"
	AccessForbidden               Code = "AccessForbidden"
	BadRequest                    Code = "BadRequest"
	AuthorizationHeaderMalformed  Code = "AuthorizationHeaderMalformed"
	AuthorizationQueryParamsError Code = "AuthorizationQueryParametersError"
	BadDigest                     Code = "BadDigest"
	BucketAlreadyExists           Code = "BucketAlreadyExists"
	BucketAlreadyOwnedByYou       Code = "BucketAlreadyOwnedByYou"
	BucketNotEmpty                Code = "BucketNotEmpty"
	EntityTooLarge                Code = "EntityTooLarge"
	ExpiredToken                  Code = "ExpiredToken"
	IncompleteBody                Code = "IncompleteBody"
	InternalError                 Code = "InternalError"
	InvalidAccessKeyID            Code = "InvalidAccessKeyId"
	InvalidArgument               Code = "InvalidArgument"
	InvalidBucketName             Code = "InvalidBucketName"
	InvalidDigest                 Code = "InvalidDigest"
	InvalidRange                  Code = "InvalidRange"
	InvalidRequest                Code = "InvalidRequest"
	InvalidURI                    Code = "InvalidURI"
	KeyTooLongError               Code = "KeyTooLongError"
	MalformedXML                  Code = "MalformedXML"
	MethodNotAllowed              Code = "MethodNotAllowed"
	MissingContentLength          Code = "MissingContentLength"
	MissingSecurityHeader         Code = "MissingSecurityHeader"
	NoSuchBucket                  Code = "NoSuchBucket"
	NoSuchKey                     Code = "NoSuchKey"
	NoSuchUpload                  Code = "NoSuchUpload"
	NotImplemented                Code = "NotImplemented"
	NotModified                   Code = "NotModified"
	PreconditionFailed            Code = "PreconditionFailed"
	RequestTimeTooSkewed          Code = "RequestTimeTooSkewed"
	ServiceUnavailable            Code = "ServiceUnavailable"
	SignatureDoesNotMatch         Code = "SignatureDoesNotMatch"
	SlowDown                      Code = "SlowDown"
	TemporaryRedirect             Code = "TemporaryRedirect"
	XAmzContentSHA256Mismatch     Code = "XAmzContentSHA256Mismatch"
	InvalidChunkSizeError         Code = "InvalidChunkSizeError"
	MalformedTrailerError         Code = "MalformedTrailerError"
	InvalidObjectName             Code = "InvalidObjectName"
	UnexpectedContent             Code = "UnexpectedContent"
	RequestHeaderSectionTooLarge  Code = "RequestHeaderSectionTooLarge"
	MissingRequestBodyError       Code = "MissingRequestBodyError"
	InvalidStorageClass           Code = "InvalidStorageClass"
	InvalidTag                    Code = "InvalidTag"
	NoSuchTagSet                  Code = "NoSuchTagSet"
	MetadataTooLarge              Code = "MetadataTooLarge"
	EntityTooSmall                Code = "EntityTooSmall"
	InvalidPart                   Code = "InvalidPart"
	InvalidPartOrder              Code = "InvalidPartOrder"
	OperationAborted              Code = "OperationAborted"
	RequestTimeout                Code = "RequestTimeout"
)

type entry struct {
	status int
	desc   string
}

// catalogue maps each code to its HTTP status and default description.
var catalogue = map[Code]entry{
	AccessDenied:                  {http.StatusForbidden, "Access Denied."},
	AccessForbidden:               {http.StatusForbidden, "CORSResponse: CORS is not enabled for this bucket."},
	BadRequest:                    {http.StatusBadRequest, "Insufficient information. Origin request header needed."},
	AuthorizationHeaderMalformed:  {http.StatusBadRequest, "The authorization header is malformed."},
	AuthorizationQueryParamsError: {http.StatusBadRequest, "Error parsing the X-Amz-Credential parameter."},
	BadDigest:                     {http.StatusBadRequest, "The Content-MD5 or checksum you specified did not match what we received."},
	BucketAlreadyExists:           {http.StatusConflict, "The requested bucket name is not available."},
	BucketAlreadyOwnedByYou:       {http.StatusConflict, "Your previous request to create the named bucket succeeded and you already own it."},
	BucketNotEmpty:                {http.StatusConflict, "The bucket you tried to delete is not empty."},
	EntityTooLarge:                {http.StatusBadRequest, "Your proposed upload exceeds the maximum allowed object size."},
	EntityTooSmall:                {http.StatusBadRequest, "Your proposed upload is smaller than the minimum allowed object size."},
	ExpiredToken:                  {http.StatusBadRequest, "The provided token has expired."},
	IncompleteBody:                {http.StatusBadRequest, "You did not provide the number of bytes specified by the Content-Length HTTP header."},
	InternalError:                 {http.StatusInternalServerError, "We encountered an internal error, please try again."},
	InvalidAccessKeyID:            {http.StatusForbidden, "The AWS access key ID you provided does not exist in our records."},
	InvalidArgument:               {http.StatusBadRequest, "Invalid argument."},
	InvalidBucketName:             {http.StatusBadRequest, "The specified bucket is not valid."},
	InvalidDigest:                 {http.StatusBadRequest, "The Content-MD5 you specified is not valid."},
	InvalidObjectName:             {http.StatusBadRequest, "Object name contains unsupported characters."},
	InvalidPart:                   {http.StatusBadRequest, "One or more of the specified parts could not be found."},
	InvalidPartOrder:              {http.StatusBadRequest, "The list of parts was not in ascending order."},
	InvalidRange:                  {http.StatusRequestedRangeNotSatisfiable, "The requested range is not satisfiable."},
	InvalidRequest:                {http.StatusBadRequest, "Invalid request."},
	InvalidStorageClass:           {http.StatusBadRequest, "The storage class you specified is not valid."},
	InvalidTag:                    {http.StatusBadRequest, "The tag provided was not a valid tag."},
	InvalidURI:                    {http.StatusBadRequest, "Couldn't parse the specified URI."},
	InvalidChunkSizeError:         {http.StatusBadRequest, "Only the last chunk is allowed to have a size less than 8192 bytes."},
	KeyTooLongError:               {http.StatusBadRequest, "Your key is too long."},
	MalformedTrailerError:         {http.StatusBadRequest, "The request contained trailing data that was not well-formed."},
	MalformedXML:                  {http.StatusBadRequest, "The XML you provided was not well-formed or did not validate against our published schema."},
	MetadataTooLarge:              {http.StatusBadRequest, "Your metadata headers exceed the maximum allowed metadata size."},
	MethodNotAllowed:              {http.StatusMethodNotAllowed, "The specified method is not allowed against this resource."},
	MissingContentLength:          {http.StatusLengthRequired, "You must provide the Content-Length HTTP header."},
	MissingRequestBodyError:       {http.StatusBadRequest, "Request body is empty."},
	MissingSecurityHeader:         {http.StatusBadRequest, "Your request was missing a required header."},
	NoSuchBucket:                  {http.StatusNotFound, "The specified bucket does not exist."},
	NoSuchKey:                     {http.StatusNotFound, "The specified key does not exist."},
	NoSuchTagSet:                  {http.StatusNotFound, "The TagSet does not exist."},
	NoSuchUpload:                  {http.StatusNotFound, "The specified multipart upload does not exist."},
	NotImplemented:                {http.StatusNotImplemented, "A header or query you provided implies functionality that is not implemented."},
	NotModified:                   {http.StatusNotModified, "Not Modified."},
	OperationAborted:              {http.StatusConflict, "A conflicting conditional operation is currently in progress against this resource."},
	PreconditionFailed:            {http.StatusPreconditionFailed, "At least one of the preconditions you specified did not hold."},
	RequestHeaderSectionTooLarge:  {http.StatusBadRequest, "Your request header section exceeds the maximum allowed size."},
	RequestTimeTooSkewed:          {http.StatusForbidden, "The difference between the request time and the server's time is too large."},
	RequestTimeout:                {http.StatusBadRequest, "Your socket connection to the server was not read from or written to within the timeout period."},
	ServiceUnavailable:            {http.StatusServiceUnavailable, "The origin is unavailable; please retry."},
	SignatureDoesNotMatch:         {http.StatusForbidden, "The request signature we calculated does not match the signature you provided."},
	SlowDown:                      {http.StatusServiceUnavailable, "Please reduce your request rate."},
	TemporaryRedirect:             {http.StatusTemporaryRedirect, "Please re-send this request to the member in the Location header, which holds the data."},
	UnexpectedContent:             {http.StatusBadRequest, "This request does not support content."},
	XAmzContentSHA256Mismatch:     {http.StatusBadRequest, "The provided 'x-amz-content-sha256' header does not match what was computed."},
}

// Error is an S3 error: a code from the catalogue and an optional message
// that replaces the catalogue's description.
type Error struct {
	Code    Code
	Message string
	// Region, if set, is the region the request should have been signed
	// for; AWS sends it with a credential scoped to another region, and
	// SDKs (botocore, minio-go) read it to sign again.
	Region string
	// HTTPStatus, if set, is the status sent instead of the code's: an
	// origin's own code, which the catalogue may lack, keeps the status
	// the origin gave it.
	HTTPStatus int
}

// New returns an *Error with code and, if msg is non-empty, that message.
func New(code Code, msg string) *Error { return &Error{Code: code, Message: msg} }

func (e *Error) Error() string {
	if e.Message != "" {
		return string(e.Code) + ": " + e.Message
	}
	return string(e.Code) + ": " + Description(e.Code)
}

// Status is the HTTP status of e: HTTPStatus if set, else its code's.
func (e *Error) Status() int {
	if e.HTTPStatus != 0 {
		return e.HTTPStatus
	}
	return Status(e.Code)
}

// Description is the message of e, or its code's default description.
func (e *Error) Description() string {
	if e.Message != "" {
		return e.Message
	}
	return Description(e.Code)
}

// Status returns the HTTP status for code; unknown codes are 500.
func Status(code Code) int {
	if ent, ok := catalogue[code]; ok {
		return ent.status
	}
	return http.StatusInternalServerError
}

// Description returns the default description for code.
func Description(code Code) string {
	if ent, ok := catalogue[code]; ok {
		return ent.desc
	}
	return catalogue[InternalError].desc
}

// Known reports whether code is in the catalogue.
func Known(code Code) bool { _, ok := catalogue[code]; return ok }

// As returns the *Error in err's chain, if any.
func As(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}

// Body is the XML document of an S3 error response.
type Body struct {
	XMLName    xml.Name `xml:"Error"`
	Code       string   `xml:"Code"`
	Message    string   `xml:"Message"`
	Region     string   `xml:"Region,omitempty"`
	BucketName string   `xml:"BucketName,omitempty"`
	Key        string   `xml:"Key,omitempty"`
	Resource   string   `xml:"Resource,omitempty"`
	RequestID  string   `xml:"RequestId"`
	HostID     string   `xml:"HostId"`
}

// Marshal renders e as the XML body of an error response: what
// encoding/xml makes of Body (TestMarshalMatchesEncodingXML), written
// field by field with xml.EscapeText, without its reflection and
// buffers (an answer that is only an error, such as a redirect, spent
// a sixth of its CPU in xml.Marshal).
func Marshal(e *Error, bucket, key, resource, requestID string) []byte {
	var b bytes.Buffer
	b.Grow(len(xml.Header) + 160 + len(bucket) + 2*len(key) + len(resource) + 2*len(requestID))
	b.WriteString(xml.Header)
	b.WriteString("<Error>")
	element(&b, "Code", string(e.Code), false)
	element(&b, "Message", e.Description(), false)
	element(&b, "Region", e.Region, true)
	element(&b, "BucketName", bucket, true)
	element(&b, "Key", key, true)
	element(&b, "Resource", resource, true)
	element(&b, "RequestId", requestID, false)
	element(&b, "HostId", requestID, false)
	b.WriteString("</Error>")
	return b.Bytes()
}

// element writes <name>text</name>, text escaped; nothing if text is
// empty and omitEmpty is set.
func element(b *bytes.Buffer, name, text string, omitEmpty bool) {
	if text == "" && omitEmpty {
		return
	}
	b.WriteByte('<')
	b.WriteString(name)
	b.WriteByte('>')
	if plain(text) {
		b.WriteString(text)
	} else {
		xml.EscapeText(b, []byte(text)) // a bytes.Buffer's writes do not fail
	}
	b.WriteString("</")
	b.WriteString(name)
	b.WriteByte('>')
}

// plain reports whether text is printable ASCII that XML text needs no
// escape for (xml.EscapeText would write it as it is).
func plain(text string) bool {
	for i := 0; i < len(text); i++ {
		switch c := text[i]; {
		case c < 0x20 || c >= 0x7f, c == '<', c == '>', c == '&', c == '"', c == '\'':
			return false
		}
	}
	return true
}
