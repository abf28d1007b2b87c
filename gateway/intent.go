// Why a chunk is wanted: one value carried from the request that wants
// it, through the flight that fetches it, to where the chunk is read from
// (its flight's plan: flightPlan) and where it is put (placeChunk).
package gateway

// intent is a set of reasons a chunk is wanted; the zero value, wantNow,
// is a reader that needs it now. A flight carries the union of the
// intents of everyone who joined it (see joined), under Engine.mu.
type intent uint8

const (
	wantNow intent = 0
	// wantAhead is a reader's read-ahead (it paid for the chunk only
	// where the working memory had room: see objectReader.fill).
	wantAhead intent = 1 << (iota - 1)
	// wantKept puts the chunk into the tiers past their admission policy,
	// read by this node itself, never forwarded to its owners: a warm-up,
	// or a fill of data this node has.
	wantKept
	// wantWritten places the chunk on writeCopies owners: data written
	// through this node. It comes with wantKept (see wantWrite).
	wantWritten
	// wantAsked is a peer asking this node as the chunk's owner: it is
	// read here (tiers, origin), never asked of another node. Only the
	// flight's starter sets it.
	wantAsked
	// wantNoChunk is a metadata lookup that fetches no chunk.
	wantNoChunk
)

// wantWrite is a fill of data written through this node.
const wantWrite = wantKept | wantWritten

func (i intent) has(j intent) bool { return i&j == j }

// joined is i after a request wanting j joined its flight: admission past
// the policy and written placement carry over; being asked, or a
// read-ahead, only matters to whoever starts the flight.
func (i intent) joined(j intent) intent { return i | j&wantWrite }
