// Each member's share of a ring: the fraction of partitions it is the
// primary owner of.
package ring

// Shares returns each member's share of the ring's partitions as their
// primary owner, from 0 to 1; the shares add up to 1 (nil with no
// members).
func (r *Ring) Shares() map[string]float64 {
	if r == nil || len(r.table) == 0 {
		return nil
	}
	out := make(map[string]float64, len(r.members))
	for _, row := range r.table {
		out[row[0]]++
	}
	for id, n := range out {
		out[id] = n / float64(len(r.table))
	}
	return out
}
