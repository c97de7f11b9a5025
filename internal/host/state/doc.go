// Package state is podhost's bbolt store: what containerd cannot tell us
// (see docs/ARCHITECTURE.md). It holds worker phases, resource allocation
// checkpoints, sandbox records (namespace paths, CNI results), the boot id,
// the last computed pod statuses and recent pod events.
//
// # Schema (SchemaVersion = 9)
//
// Every value is JSON. Keys are plain strings unless noted.
//
//	meta/
//	  schemaVersion       number: the schema version the file was migrated to
//	  bootID              string: kernel boot id recorded by the daemon (absent = never set)
//	workers/<pod uid>     WorkerRecord   (podworkers phase + grace period + last pod)
//	allocations/<pod uid> Allocation     (admitted requests, host ports, per-container resources)
//	sandboxes/<id>        SandboxRecord  (pinned namespaces, CNI result, cgroup)
//	statuses/<pod uid>    corev1.PodStatus (last computed status)
//	events/<pod uid>/     one sub-bucket per pod:
//	  <8-byte big-endian sequence>  Event (a repeat: counted, moved last)
//	  pod                           {namespace, name} of the pod
//	  at most MaxEventsPerPod and MaxEventBytesPerPod per pod; adding
//	  beyond drops the oldest. Outlives the pod's other records:
//	  ExpireEvents drops it EventTTL after its last event.
//	manifests/<file path> ManifestRecord (v2: last content of the file that
//	                      decoded; raw bytes — never Secret values — and its
//	                      place in the first-seen order, Seen)
//	identities/<ns/name>  IdentityRecord (v3: the UID an upgraded pod keeps
//	                      while its identity hash is unchanged)
//	rollouts/<ns/name>    RolloutRecord (v4: a pod's last versions, its
//	                      rollback window and the rollback/undo in force)
//	logremovals/<pod uid> {"uid"} (v5: a deleted pod whose log directory
//	                      is still to be removed; the key is the record,
//	                      the value is not read)
//	userns/<pod uid>      UserNSRecord (v6: the host id range of a pod with
//	                      hostUsers: false)
//	quotas/<uid>/<volume> QuotaRecord (v7: the project ID of a disk emptyDir
//	                      measured by project quota; outlives PurgePod, goes
//	                      once the volume's directory is removed)
//	jobs/<Job ns/name>    JobRecord (v8: a finished Job run whose pods its
//	                      ttlSecondsAfterFinished removed)
//	cronjobs/<CronJob ns/name> CronJobRecord (v9: a CronJob's creation and
//	                      last schedule times and the Jobs it made)
//
// # Versions and migrations
//
// The `migrations` slice lists one step per version, in order; migration N
// turns a version N-1 file into version N. Open runs every step newer than
// the file's version inside one transaction and records the new version, so
// a crash mid-migration leaves the old version intact. v1 creates the buckets
// above but manifests (an empty or new file has version 0); v2 adds
// manifests, v3 identities, v4 rollouts, v5 logremovals, v6 userns, v7 quotas, v8 jobs, v9 cronjobs. A file whose version is newer than SchemaVersion is refused
// (ErrSchemaTooNew): an older podhost must not write a layout it does not
// understand.
//
// # Concurrency and atomicity
//
// Every method is one bbolt transaction. Use DB.Update for several changes
// that must commit together (PurgePod is one). bbolt holds an exclusive file
// lock while the DB is open; a second podhost on the same file fails after
// one second with ErrLocked. Crash safety is bbolt's (fsync per commit).
package state
