// Package gc keeps podhost's log directory bounded (see docs/appliance.md,
// "Disk"). The log driver already rotates each
// instance's file within logMaxSize×logMaxFiles; logs/gc removes what the
// driver never will:
//
//   - the log directories of pods that are gone (after their cleanup):
//     the syncer removes a deleted pod's with its containers, logs/gc those
//     it left (no removal recorded: an older podhost, a lost state db);
//   - the files of old restarts: only the current and the previous
//     instance of each container are kept (what `logs --previous` needs);
//   - rotated files beyond logMaxFiles (left by a lowered setting);
//   - with logDirMaxSize set, the oldest files until the directory fits,
//     never the live file of a container's current instance.
//
// Plan is the pure planner; Collector scans the directory and applies it.
package gc

import (
	"sort"
	"time"
)

// File is one log file: <pod dir>/<container>/<restart>.log[.<rotation>].
type File struct {
	Path      string
	Container string
	Restart   int
	Rotation  int // 0: the live file; n: <path>.n
	Size      int64
	ModTime   time.Time
}

// PodDir is one <ns>_<name>_<uid> directory and its log files.
type PodDir struct {
	Path  string
	UID   string
	Files []File
}

// Policy bounds the directory.
type Policy struct {
	MaxFiles int   // rotated files kept per instance (logMaxFiles); 0 = no bound
	MaxTotal int64 // logDirMaxSize in bytes; 0 = off
}

// Plan returns the pod directories and the files to remove. active tells
// whether a pod (by UID) still exists: the directories of the others go
// whole. Within an active pod's container, the files of restarts older
// than the two newest go, and rotations beyond MaxFiles. Then, if the
// remaining total is above MaxTotal, files go oldest first (by
// modification time), except the live file of each container's newest
// restart.
func Plan(dirs []PodDir, active func(uid string) bool, p Policy) (rmDirs, rmFiles []string) {
	var kept []File
	protected := map[string]bool{}
	var total int64
	for _, d := range dirs {
		if !active(d.UID) {
			rmDirs = append(rmDirs, d.Path)
			continue
		}
		keep, drop := planPod(d.Files, p.MaxFiles)
		for _, f := range drop {
			rmFiles = append(rmFiles, f.Path)
		}
		for _, f := range keep {
			total += f.Size
		}
		kept = append(kept, keep...)
		for _, f := range liveFiles(keep) {
			protected[f.Path] = true
		}
	}
	if p.MaxTotal <= 0 || total <= p.MaxTotal {
		return rmDirs, rmFiles
	}
	sort.SliceStable(kept, func(i, j int) bool { return kept[i].ModTime.Before(kept[j].ModTime) })
	for _, f := range kept {
		if total <= p.MaxTotal {
			break
		}
		if protected[f.Path] {
			continue
		}
		rmFiles = append(rmFiles, f.Path)
		total -= f.Size
	}
	return rmDirs, rmFiles
}

// planPod splits one pod's files into kept and dropped: per container, the
// two newest restarts stay (rotations up to maxFiles).
func planPod(files []File, maxFiles int) (keep, drop []File) {
	newest := map[string][]int{} // container -> two highest restart numbers
	for _, f := range files {
		newest[f.Container] = topTwo(newest[f.Container], f.Restart)
	}
	for _, f := range files {
		switch {
		case !contains(newest[f.Container], f.Restart):
			drop = append(drop, f)
		case maxFiles > 0 && f.Rotation > maxFiles:
			drop = append(drop, f)
		default:
			keep = append(keep, f)
		}
	}
	return keep, drop
}

// liveFiles are the live files (rotation 0) of each container's newest restart.
func liveFiles(files []File) []File {
	newest := map[string]int{}
	for _, f := range files {
		if n, ok := newest[f.Container]; !ok || f.Restart > n {
			newest[f.Container] = f.Restart
		}
	}
	var out []File
	for _, f := range files {
		if f.Rotation == 0 && f.Restart == newest[f.Container] {
			out = append(out, f)
		}
	}
	return out
}

func topTwo(top []int, n int) []int {
	if contains(top, n) {
		return top
	}
	top = append(top, n)
	sort.Sort(sort.Reverse(sort.IntSlice(top)))
	if len(top) > 2 {
		top = top[:2]
	}
	return top
}

func contains(s []int, n int) bool {
	for _, v := range s {
		if v == n {
			return true
		}
	}
	return false
}
