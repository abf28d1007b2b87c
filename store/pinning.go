// Pinning: the contract of the set of pinned prefixes as the admin API
// changes it (the tiers only ask it, through PinSet; store/pins
// implements both).
package store

import "errors"

// Errors of Pins.Remove.
var (
	// ErrPinConfigured means a pin comes from the configuration file and
	// can only be removed there.
	ErrPinConfigured = errors.New("store: pin is set in the configuration file")
	// ErrNoSuchPin means there is no such pin to remove.
	ErrNoSuchPin = errors.New("store: no such pin")
)

// Pin is one pinned prefix of a bucket.
type Pin struct {
	Bucket     string `json:"bucket"`
	Prefix     string `json:"prefix"`
	Configured bool   `json:"configured"` // from the configuration file
}

// Pins is a PinSet the node's operators change. Each change bumps
// Generation and is saved before it returns (a failed save changes
// nothing).
type Pins interface {
	PinSet
	// Add pins bucket/prefix; pinning what is pinned already is no error.
	Add(bucket, prefix string) error
	// Remove unpins bucket/prefix: ErrPinConfigured for a pin of the
	// configuration file, ErrNoSuchPin if there is none.
	Remove(bucket, prefix string) error
	// List returns every pin, by bucket then prefix.
	List() []Pin
}
