// Package layering holds the test that keeps Granary's layers apart: no
// package above store imports a concrete store implementation; they use
// the contracts in package store, and cmd/granary wires the concrete ones
// in (see ARCHITECTURE.md, "Store contracts").
package layering
