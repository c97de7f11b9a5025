package rolling

import (
	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/model/records"
)

// JobRecords keep the Job runs a TTL removed (*state.DB): a file-sourced
// Job's document still declares it after its ttlSecondsAfterFinished, so
// "deleted" means its pods are removed and the run is not made again —
// also after a podhost restart — until the document changes or goes.
type JobRecords interface {
	ListJobs() ([]records.JobRecord, error)
	PutJob(r records.JobRecord) error
	DeleteJob(key string) error
}

// jobState is the Job's state to plan from: the last Step's, else (first
// sight, a podhost restart) its run a TTL removed before, if the
// document still makes that run.
func (c *Controller) jobState(key string, w *manifest.Workload) JobState {
	if js, ok := c.jobs[key]; ok || len(w.Pods) == 0 {
		return js
	}
	c.loadJobRecords()
	if rec, ok := c.expired[key]; ok && rec.FirstUID == w.Pods[0].UID {
		return ExpiredJob(rec.FirstUID, rec.Status)
	}
	return JobState{}
}

func (c *Controller) loadJobRecords() {
	if c.expired != nil {
		return
	}
	c.expired = map[string]records.JobRecord{}
	if c.stored == nil {
		return
	}
	recs, err := c.stored.ListJobs()
	if err != nil {
		c.log.Warn("job records unreadable: a Job its TTL removed may run again", "err", err)
		return
	}
	for _, r := range recs {
		c.expired[r.Key] = r
	}
}

// recordJobs stores the runs a TTL has just removed and forgets the
// records of Jobs that run another template or are gone.
func (c *Controller) recordJobs(jobs map[string]JobState) {
	c.loadJobRecords()
	for key, js := range jobs {
		rec, had := c.expired[key]
		switch {
		case js.Expired && (!had || rec.FirstUID != js.first):
			rec = records.JobRecord{Key: key, FirstUID: js.first, Status: js.Status, Removed: c.now()}
			c.expired[key] = rec
			c.storeJob(rec, "")
		case !js.Expired && had:
			delete(c.expired, key)
			c.storeJob(records.JobRecord{}, key)
		}
	}
	for key := range c.expired {
		if _, ok := jobs[key]; !ok {
			delete(c.expired, key)
			c.storeJob(records.JobRecord{}, key)
		}
	}
}

// storeJob writes rec, or deletes the record of del.
func (c *Controller) storeJob(rec records.JobRecord, del string) {
	if c.stored == nil {
		return
	}
	var err error
	if del != "" {
		err = c.stored.DeleteJob(del)
	} else {
		err = c.stored.PutJob(rec)
	}
	if err != nil {
		c.log.Warn("job record not stored: a Job its TTL removed may run again after a restart", "job", rec.Key+del, "err", err)
	}
}
