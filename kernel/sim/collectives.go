package sim

import (
	"fmt"
	"sync"
)

// collectives is the rendezvous of all_reduce: every program instance runs
// the same sequence of collective instructions; round r completes when all
// instances have contributed to it.
type collectives struct {
	mu      sync.Mutex
	cond    *sync.Cond
	n       int
	round   int
	arrived int
	data    [][]float64
	snap    [][]float64
	err     error
}

type collAbort struct{ cause error }

func (e *collAbort) Error() string {
	return fmt.Sprintf("collective abandoned: another program instance failed: %v", e.cause)
}

func newCollectives(n int) *collectives {
	c := &collectives{n: n, data: make([][]float64, n)}
	c.cond = sync.NewCond(&c.mu)
	return c
}

func (c *collectives) abort(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	c.mu.Unlock()
	c.cond.Broadcast()
}

// exchange contributes data for instance lin and returns every instance's
// contribution to this round.
func (c *collectives) exchange(lin int, data []float64) ([][]float64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return nil, &collAbort{c.err}
	}
	c.data[lin] = data
	c.arrived++
	my := c.round
	if c.arrived == c.n {
		c.snap = c.data
		c.data = make([][]float64, c.n)
		c.arrived = 0
		c.round++
		c.cond.Broadcast()
	} else {
		for c.round == my && c.err == nil {
			c.cond.Wait()
		}
		if c.round == my {
			return nil, &collAbort{c.err}
		}
	}
	return c.snap, nil
}

type allReduceAux struct {
	op    *binop
	group map[int][]int // instance -> its group's members, in order
	axes  []int         // program_axes: reduce over these grid axes only (nil: all)
}

// prepAllReduce: op:s; replica_groups:ints is the flattened list of groups
// of program instances (linear ids, row-major over the grid) and
// group_size:i their size; without replica_groups all instances form one
// group. Every instance must belong to exactly one group. Without
// replica_groups, program_axes:ints (grid axes) restricts each reduction to
// the instances that differ only along those axes.
func prepAllReduce(ci *cinst) error {
	s, err := ci.str("op", "add")
	if err != nil {
		return err
	}
	a := &allReduceAux{}
	if a.op, err = lookupBinop(s); err != nil {
		return err
	}
	g, ok, err := ci.ints("replica_groups")
	if err != nil {
		return err
	}
	if ok && len(g) > 0 {
		gs, err := ci.integer("group_size", int64(len(g)))
		if err != nil {
			return err
		}
		if gs <= 0 || int64(len(g))%gs != 0 {
			return fmt.Errorf("replica_groups of %d ids do not split into groups of %d", len(g), gs)
		}
		a.group = map[int][]int{}
		for i := 0; i < len(g); i += int(gs) {
			var mem []int
			for _, x := range g[i : i+int(gs)] {
				mem = append(mem, int(x))
			}
			for _, x := range mem {
				if _, dup := a.group[x]; dup {
					return fmt.Errorf("program instance %d is in two replica groups", x)
				}
				a.group[x] = mem
			}
		}
	}
	if a.group == nil {
		ax, ok, err := ci.ints("program_axes")
		if err != nil {
			return err
		}
		if ok {
			a.axes = []int{}
			for _, x := range ax {
				a.axes = append(a.axes, int(x))
			}
		}
	}
	if ci.src[0].n != ci.dst[0].n {
		return fmt.Errorf("src tile %v and dst tile %v differ in size", ci.src[0].shape, ci.dst[0].shape)
	}
	ci.aux = a
	return nil
}

func runAllReduce(in *instance, ci *cinst) error {
	a := ci.aux.(*allReduceAux)
	src := ci.src[0]
	v, err := in.resolve(ci, src, nil, false)
	if err != nil {
		return err
	}
	buf := make([]float64, src.n)
	in.gather(v, src.shape, buf)
	members := []int{}
	if a.group != nil {
		m, ok := a.group[in.lin]
		if !ok {
			return ci.errf("runtime", "program instance %d is in no replica group", in.lin)
		}
		members = m
	} else if a.axes != nil {
		m, err := axisGroup(in, ci, a.axes)
		if err != nil {
			return err
		}
		members = m
	} else {
		for i := 0; i < int(in.r.p.numInstances); i++ {
			members = append(members, i)
		}
	}
	var all [][]float64
	if in.r.coll == nil {
		all = [][]float64{buf}
	} else {
		all, err = in.r.coll.exchange(in.lin, buf)
		if err != nil {
			return err
		}
	}
	res := make([]float64, src.n)
	for j, m := range members {
		if m < 0 || m >= len(all) || all[m] == nil {
			return ci.errf("runtime", "replica group member %d is not a program instance", m)
		}
		if len(all[m]) != src.n {
			return ci.errf("runtime", "instances contribute tiles of different sizes")
		}
		if j == 0 {
			for i, x := range all[m] {
				res[i] = float64(float32(x))
			}
		} else {
			a.op.vec(res, res, all[m])
		}
	}
	return in.writeDst(ci, res)
}

// axisGroup lists the instances (linear ids, ascending) whose program ids equal
// in's on every grid axis outside axes.
func axisGroup(in *instance, ci *cinst, axes []int) ([]int, error) {
	grid := in.r.p.k.Grid
	along := make([]bool, len(grid))
	for _, x := range axes {
		if x < 0 || x >= len(grid) {
			return nil, ci.errf("invalid", "all_reduce program_axes %v: axis %d is not an axis of the launch grid %v", axes, x, grid)
		}
		along[x] = true
	}
	var members []int
	pid := make([]int64, len(grid))
	for lin := 0; lin < int(in.r.p.numInstances); lin++ {
		rem := int64(lin)
		for d := len(grid) - 1; d >= 0; d-- {
			pid[d] = rem % grid[d]
			rem /= grid[d]
		}
		same := true
		for d := range grid {
			if !along[d] && pid[d] != in.pid[d] {
				same = false
				break
			}
		}
		if same {
			members = append(members, lin)
		}
	}
	return members, nil
}
