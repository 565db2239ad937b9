package runtime

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"go.uber.org/zap"
)

// Descriptor budget. A node's descriptors go to a fixed reserve (standard streams, the
// listener, the poller, the data directory's fsyncs, index files being written, the
// sync workers' transient opens), the state store (pebble: its WAL, manifest, lock and
// the tables it keeps open), client connections (max.connections) and the partition
// logs' handle cache (sluice.log.max.open.files). Start fails when the limit cannot
// hold the minimum of each, rather than serving a node that cannot accept.
const (
	fdFixedReserve  = 64
	fdPebbleReserve = 100
	minConnections  = 16
	minLogFiles     = 32
	// maxDerivedLogFiles caps the derived cache size: more open files cost kernel
	// memory and buy little once every busy partition's active segment fits.
	maxDerivedLogFiles = 1 << 16
	// partitionsPerLogFile derives sluice.max.partitions from the cache size: past it,
	// a workload touching every partition reopens a file on most appends.
	partitionsPerLogFile = 16
	// bytesPerPartition is a conservative estimate of a partition's resident memory
	// with its logs idle (docs/limits.md measures it); a quarter of the machine's memory
	// bounds the derived sluice.max.partitions.
	bytesPerPartition = 64 << 10
	// minFreeAfterStart is how many descriptors must be left once the node has
	// recovered and listens, for accepts and transient opens.
	minFreeAfterStart = minConnections + 16
)

// fdBudget is how a node splits its descriptor limit.
type fdBudget struct {
	soft, hard    uint64 // RLIMIT_NOFILE after raising the soft limit
	connections   int    // max.connections, possibly lowered to fit
	logFiles      int    // the partition logs' handle cache
	maxPartitions int    // sluice.max.partitions, possibly derived
}

// planFDs splits limit between connections and log files. wantConns and wantFiles are
// the configured values (wantFiles 0: derive). A configured value that does not fit
// is lowered, with a warning; a limit that cannot hold the minimum is an error.
func planFDs(limit uint64, wantConns, wantFiles int, lg *zap.Logger) (fdBudget, error) {
	b := fdBudget{soft: limit}
	need := uint64(fdFixedReserve + fdPebbleReserve + minConnections + minLogFiles)
	if limit < need {
		return b, fmt.Errorf("the open-file limit (RLIMIT_NOFILE) is %d; a node needs at "+
			"least %d descriptors (%d reserved, %d for the state store, %d connections, %d "+
			"log files): raise it (ulimit -n, systemd LimitNOFILE=)", limit, need,
			fdFixedReserve, fdPebbleReserve, minConnections, minLogFiles)
	}
	avail := int(min(limit-fdFixedReserve-fdPebbleReserve, 1<<30))
	if wantFiles > 0 {
		b.logFiles = min(wantFiles, avail-minConnections)
		b.connections = min(wantConns, avail-b.logFiles)
	} else {
		b.connections = min(wantConns, max(avail/2, minConnections), avail-minLogFiles)
		b.logFiles = min(avail-b.connections, maxDerivedLogFiles)
	}
	if b.logFiles < wantFiles {
		lg.Warn("open-file limit too small for sluice.log.max.open.files; lowering it",
			zap.Uint64("rlimit_nofile", limit), zap.Int("sluice.log.max.open.files", wantFiles),
			zap.Int("lowered_to", b.logFiles))
	}
	if b.connections < wantConns {
		lg.Warn("open-file limit too small for max.connections; lowering it",
			zap.Uint64("rlimit_nofile", limit), zap.Int("max.connections", wantConns),
			zap.Int("lowered_to", b.connections))
	}
	return b, nil
}

// derivePartitions is the default sluice.max.partitions: the smaller of a bound from
// the handle cache and one from memory (memBytes 0: unknown, not used).
func derivePartitions(logFiles int, memBytes uint64) int {
	n := logFiles * partitionsPerLogFile
	if memBytes > 0 {
		n = min(n, int(min(memBytes/4/bytesPerPartition, 1<<30)))
	}
	return max(n, 1)
}

// memoryBytes is the memory the node may use: the cgroup limit when there is one,
// else the machine's memory; 0 when neither can be read.
func memoryBytes() uint64 {
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil {
			return min(v, machineMemory())
		}
	}
	return machineMemory()
}

func machineMemory() uint64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseUint(fields[1], 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// openDescriptors counts the process's open descriptors; -1 when it cannot tell.
func openDescriptors() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents) - 1 // the directory being read
}

// budgetFDs raises the open-file limit, splits it (planFDs), derives
// sluice.max.partitions when it is not set, and logs the result.
func (n *Node) budgetFDs() error {
	soft, hard, err := raiseFDLimit()
	if err != nil {
		return err
	}
	b, err := planFDs(soft, n.opts.Net.MaxConns, n.opts.MaxOpenLogFiles, n.lg)
	if err != nil {
		return err
	}
	b.hard = hard
	mem := memoryBytes()
	b.maxPartitions = n.opts.Config.MaxPartitions
	derived := b.maxPartitions == 0
	if derived {
		b.maxPartitions = derivePartitions(b.logFiles, mem)
		n.opts.Config.MaxPartitions = b.maxPartitions
	}
	n.fds = b
	n.lg.Info("descriptor budget", zap.Uint64("rlimit_nofile_soft", soft),
		zap.Uint64("rlimit_nofile_hard", hard), zap.Int("max.connections", b.connections),
		zap.Int("sluice.log.max.open.files", b.logFiles),
		zap.Int("reserved", fdFixedReserve+fdPebbleReserve),
		zap.Int("sluice.max.partitions", b.maxPartitions), zap.Bool("derived", derived),
		zap.Uint64("memory_bytes", mem))
	return nil
}

// checkFreeFDs fails start when recovery left too few descriptors to accept clients:
// better a clear error than a node that says it serves and refuses every connection.
func (n *Node) checkFreeFDs() error {
	used := openDescriptors()
	if used < 0 {
		return nil
	}
	free := int(min(n.fds.soft, 1<<30)) - used
	// The log cache may still grow to its limit; what it has not opened yet is spoken for.
	spoken := n.files.Limit() - n.files.Stats().Open
	n.lg.Info("descriptors after recovery", zap.Int("open", used), zap.Int("free", free),
		zap.Int("log_files_open", n.files.Stats().Open))
	if free-max(spoken, 0) < minFreeAfterStart {
		return fmt.Errorf("after recovering the logs %d of %d descriptors are open and the "+
			"log cache may open %d more, leaving fewer than %d for clients; raise the "+
			"open-file limit (ulimit -n) or lower sluice.log.max.open.files", used, n.fds.soft,
			spoken, minFreeAfterStart)
	}
	return nil
}
