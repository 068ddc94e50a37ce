package eval

// radixOrder is a sort comparator that is a strict order of one integer key
// per element, the same key on both sides (jnp.sort's canonicalize-then-
// TOTALORDER comparator): less(a, b) is keys[a] < keys[b] for the unsigned,
// direction-adjusted keys. A stable LSD radix sort by these keys makes the
// permutation stableSort makes with less: both are the stable order of one
// strict weak order.
type radixOrder struct {
	keys  []uint64
	bytes int // significant low bytes of the keys
}

// radixSortMin is the line length from which radix beats the merge sort.
const radixSortMin = 512

// radixSortDisabled sends every line to stableSort (tests compare the two).
var radixSortDisabled = false

// newRadixOrder returns the order of ks, or nil when the two sides' keys
// differ. bits is the key width; desc reverses the order.
func newRadixOrder[K int32 | int64](ks [2][]K, bits int, desc bool) *radixOrder {
	a, b := ks[0], ks[1]
	if len(a) != len(b) {
		return nil
	}
	for i := range a {
		if a[i] != b[i] {
			return nil
		}
	}
	keys := make([]uint64, len(a))
	flip := uint64(1) << (bits - 1) // signed to unsigned, order kept
	mask := ^uint64(0) >> (64 - bits)
	for i, k := range a {
		u := (uint64(k) ^ flip) & mask
		if desc {
			u = ^u & mask
		}
		keys[i] = u
	}
	return &radixOrder{keys: keys, bytes: bits / 8}
}

// sort orders the element indices xs (buf is scratch of the same length)
// stably by key, one byte a pass from the lowest, skipping bytes every key
// shares. Keys travel with their indices, so every pass reads and writes
// memory in order.
func (r *radixOrder) sort(xs, buf []int64) {
	n := len(xs)
	keys, kbuf := make([]uint64, n), make([]uint64, n)
	for i, x := range xs {
		keys[i] = r.keys[x]
	}
	src, dst := xs, buf[:n]
	var count [256]int
	for pass := 0; pass < r.bytes; pass++ {
		shift := uint(8 * pass)
		clear(count[:])
		for _, k := range keys {
			count[byte(k>>shift)]++
		}
		if count[byte(keys[0]>>shift)] == n {
			continue // every key has this byte: the pass would not move anything
		}
		sum := 0
		for d := range count {
			c := count[d]
			count[d] = sum
			sum += c
		}
		for i, k := range keys {
			d := byte(k >> shift)
			p := count[d]
			dst[p], kbuf[p] = src[i], k
			count[d] = p + 1
		}
		src, dst = dst, src
		keys, kbuf = kbuf, keys
	}
	if &src[0] != &xs[0] {
		copy(xs, src)
	}
}
