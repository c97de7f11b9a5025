#!/usr/bin/env bash
# move-wings.sh: regroup internal/ into wings (issue 29), mechanically, on the
# current checkout of main or a later commit. Run from anywhere in the repo:
#
#   scripts/dev/move-wings.sh          # then: go build ./... && make lint
#
# Idempotent: a second run finds nothing to do. What it does, in order:
#  1. git mv internal/<pkg> to its wing (MOVES below; a directory that is
#     already there has new files moved in one by one);
#  2. rewrites internal/<pkg> to the new path in every tracked text file
#     (imports, comments, scripts, Makefile, docs, golangci config);
#  3. renames the package clause where the leaf changed (RENAMES) and the
#     importers' qualified references (pkg.Name);
#  4. moves the podhost.io/ keys (string consts) out of podstate, runtime and
#     resize into internal/model/wellknown, and the record types the core uses out
#     of the bbolt package (host/state) into internal/model/records;
#  5. renames the files called order.go that are not package order's;
#  6. gofmt -w on every changed .go file.
# The syntax-aware work (4, and the references in 3) is move-wings.go's,
# built from copies of move-wings{,-refs,-lib}.go (standard library only).
set -euo pipefail

root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
here=$(cd "$(dirname "$0")" && pwd)
cd "$root"
GO=${GO:-go}
start=$SECONDS

# old internal/ path → new path. Unlisted: daemon, config, version, logs,
# testenv, tools (stay where they are).
MOVES=(
	# model: pure vocabulary every wing shares (plus wellknown, records below)
	podstate:model/podstate qos:model/qos runtimeapi:model/runtimeapi
	# desired: what the user asked for, from manifest files to the desired set
	manifest:desired/manifest source:desired/source podconfig:desired/podset
	rollout:desired/rollout order:desired/order configdata:desired/configdata
	# logs: the container log files: driver (shim-spawned writer), reading, gc
	logdriver:logs/driver loggc:logs/gc
	# host: adapters to the machine (containerd, namespaces, CNI, cgroups, disk, bbolt)
	runtime:host/runtime sandbox:host/sandbox network:host/network
	cgroups:host/cgroups volumes:host/volumes shimgroup:host/shimgroup
	spec:host/spec state:host/state
	# kubelet: the engine (the kubelet's sync loop and its subsystems)
	manager:kubelet/manager podworkers:kubelet/podworkers syncer:kubelet/syncer
	status:kubelet/status pleg:kubelet/pleg prober:kubelet/prober
	podcache:kubelet/podcache admission:kubelet/admission
	lifecycle:kubelet/lifecycle handler:kubelet/handler resize:kubelet/resize
	imagegc:kubelet/imagegc
	# ops: the node's own operation around the engine
	nodeshutdown:ops/nodeshutdown watchdog:ops/watchdog footprint:ops/footprint
	metrics:ops/metrics rthealth:ops/rthealth recovery:ops/recovery
	# services: what the node serves (podhost's API; next: kube API, kubelet API, join)
	api:services/api
	# clients: what people run and read
	cli:clients/cli podview:clients/podview
)
# Leaves whose package name changes: new path:old name:what prose calls it
# now (the new package name is the leaf).
RENAMES=(desired/podset:podconfig:podset logs/driver:logdriver:logs/driver logs/gc:loggc:logs/gc)
# Files called order.go that are not package order's: old:new, by directory.
FILES=(
	kubelet/manager/order.go:after.go kubelet/manager/order_test.go:after_test.go
	kubelet/podworkers/order.go:namequeue.go kubelet/podworkers/order_test.go:namequeue_test.go
	kubelet/syncer/order.go:termorder.go kubelet/syncer/order_test.go:termorder_prereq_test.go
)
RECORDS=PhaseSyncing,PhaseTerminating,PhaseTerminated,SandboxCreating,SandboxReady,SandboxRemoving,WorkerRecord,HostPort,Allocation,PortMapping,SandboxRecord,MaxEventsPerPod,Event,PodEvent,IdentityRecord,ManifestRecord,RolloutRecord,Revision,Override

say() { echo "move-wings: $*" >&2; }

# 1. Directories.
moved=()
for m in "${MOVES[@]}"; do
	old=internal/${m%%:*} new=internal/${m#*:}
	[[ -d $old ]] || continue
	mkdir -p "$(dirname "$new")"
	if [[ ! -e $new ]]; then
		git mv "$old" "$new"
	else
		# Already moved by an earlier run: bring over what appeared since.
		(cd "$old" && git ls-files) | while read -r f; do
			mkdir -p "$(dirname "$new/$f")"
			git mv "$old/$f" "$new/$f"
		done
		find "$old" -depth -type d -empty -delete
	fi
	say "moved $old → $new"
	moved+=("$old:$new")
done

# 2. Paths, in every tracked text file. One pass with a lookup table, so a
# new path is never rewritten again; internal/x matches neither
# internal/xy nor other/internal/x (but does match podhost/podhost/internal/x).
table=$(printf '%s\n' "${MOVES[@]}")
alt=$(printf '%s\n' "${MOVES[@]}" | cut -d: -f1 | paste -sd'|')
re="(?:(?<=podhost/podhost/)|(?<![\\w-]/))(?<![\\w.-])internal/($alt)\\b(?![\\w-])"
mapfile -t files < <(git grep -lIP "$re" -- . ':!go.sum' || true)
if ((${#files[@]})); then
	TABLE=$table perl -pi -e '
		BEGIN { %m = map { split /:/ } split /\n/, $ENV{TABLE} }
		s{'"$re"'}{"internal/$m{$1}"}ge' "${files[@]}"
	say "rewrote paths in ${#files[@]} files"
fi

# The Go half, built once from a copy (the tree may not build mid-move).
tool=$(mktemp -d)
trap 'rm -rf "$tool"' EXIT
for f in move-wings.go move-wings-refs.go move-wings-lib.go; do
	grep -v '^//go:build ignore' "$here/$f" >"$tool/$f"
done
printf 'module movewings\n\ngo 1.23\n' >"$tool/go.mod"
(cd "$tool" && GOFLAGS= GOWORK=off "$GO" build -o mw .)
mw() { "$tool/mw" "$@"; }

# Relative paths out of the moved packages (../../docs/x, Join("..", "..")).
for m in "${moved[@]}"; do
	mw relpaths -from "${m%%:*}" -to "${m#*:}"
done

# 3. Package clauses whose leaf changed, then the importers' pkg.Name.
for r in "${RENAMES[@]}"; do
	IFS=: read -r dir old word <<<"$r"
	dir=internal/$dir new=$(basename "$dir")
	[[ -d $dir ]] || continue
	for f in "$dir"/*.go; do
		perl -pi -e "s/^package \\Q$old\\E(_test)?\$/package $new\$1/; s{^// Package \\Q$old\\E\\b}{// Package $new}" "$f"
	done
	mw requalify -from "$dir" -to "$dir" -from-name "$old"
	# In prose: old.X → new.X, the bare old name → word (not "old:" error
	# prefixes nor "old-" names; in .go files only after //).
	sub="s/\\b$old\\.(?=[A-Za-z])/$new./g; s{\\b$old\\b(?![-:.])}{$word}g;"
	mapfile -t prose < <(git grep -lwP "$old" -- '*.c' '*.h' || true)
	((${#prose[@]} == 0)) || perl -pi -e "$sub" "${prose[@]}"
	mapfile -t prose < <(git grep -lwP "$old" -- '*.md' || true) # quote no error text
	((${#prose[@]} == 0)) || perl -pi -e "${sub//-:./-.}" "${prose[@]}"
	mapfile -t prose < <(git grep -lP "//.*\\b$old\\b" -- '*.go' || true)
	((${#prose[@]} == 0)) || perl -pi -e 'BEGIN { sub fix { local $_ = shift; '"$sub"' return $_ } } s{(//.*)}{fix($1)}e' "${prose[@]}"
done

# 4. podhost.io/ keys → model/wellknown; record types → model/records.
keysdoc='Package wellknown holds every podhost.io/ label and annotation key podhost
reads or writes (on containerd containers, leases, snapshots and pods) and
the parsing of their values: the one place a new key is added.'
# resize.AnnotationPending needs its package's name in the shared one.
KEYRENAMES=AnnotationPending=AnnotationResizePending
for src in internal/model/podstate internal/host/runtime internal/kubelet/resize; do
	[[ -d $src ]] || continue
	mw move -from "$src" -to internal/model/wellknown -pkg wellknown -file wellknown.go \
		-prefix podhost.io/ -names ParseRollbackAfter -renames "$KEYRENAMES" -doc "$keysdoc"
done
recdoc='Package records holds the records podhost persists in its state db
(internal/host/state, bbolt) as plain types, so the packages that use them
(the engine, the desired state) do not link bbolt.'
if [[ -d internal/host/state ]]; then
	mw move -from internal/host/state -to internal/model/records -pkg records \
		-file records.go -names "$RECORDS" -doc "$recdoc"
fi
for pair in internal/model/podstate:internal/model/wellknown internal/host/runtime:internal/model/wellknown \
	internal/kubelet/resize:internal/model/wellknown internal/host/state:internal/model/records; do
	src=${pair%%:*} dst=${pair#*:}
	[[ -d $src && -d $dst ]] || continue
	ren=
	[[ $dst == */wellknown ]] && ren=$KEYRENAMES
	mw qualify -dir "$src" -target "$dst" -renames "$ren"
	mw requalify -from "$src" -to "$dst" -renames "$ren"
done

# Their names in prose: the docs, and Go comments (only after //: code is
# done above, and there state.X may be a variable's field).
recre=${RECORDS//,/|}
subst='s/(?<![\w.])podstate\.((?:Label|Annotation|ParseRollbackAfter)\w*)/wellknown.$1/g;
	s/(?<![\w.])runtime\.LabelImageLastUsed\b/wellknown.LabelImageLastUsed/g;
	s/(?<![\w.])resize\.AnnotationPending\b/wellknown.AnnotationResizePending/g;
	s/(?<![\w.])state\.('"$recre"')\b/records.$1/g;'
prose="(?<![\\w.])(?:podstate\\.(?:Label|Annotation|ParseRollbackAfter)|runtime\\.LabelImageLastUsed|resize\\.AnnotationPending|state\\.(?:$recre)\\b)"
mapfile -t docs < <(git grep -lP "$prose" -- '*.md' || true)
((${#docs[@]} == 0)) || perl -pi -e "$subst" "${docs[@]}"
mapfile -t gofiles < <(git grep -lP "//.*$prose" -- '*.go' || true)
((${#gofiles[@]} == 0)) || perl -pi -e 'BEGIN { sub fix { local $_ = shift; '"$subst"' return $_ } } s{(//.*)}{fix($1)}e' "${gofiles[@]}"

# 5. order.go files of packages other than order.
for m in "${FILES[@]}"; do
	old=internal/${m%%:*} new=$(dirname "internal/${m%%:*}")/${m#*:}
	[[ -e $old && ! -e $new ]] || continue
	git mv "$old" "$new"
done
perl -pi -e "s/\\(order\\.go, the kubelet's killContainersWithSyncResult\\)/(termorder.go, the kubelet's killContainersWithSyncResult)/" docs/ARCHITECTURE.md

# 6. Format (import order) and stage (tracked files and the two new packages).
git ls-files -z -m -o --exclude-standard -- '*.go' | xargs -0 -r gofmt -w
git add -u
for d in internal/model/wellknown internal/model/records; do
	if [[ -d $d ]]; then git add "$d"; fi
done
left=$(git grep -nP "$re" -- . ':!go.sum' || true)
[[ -z $left ]] || { say "paths left unrewritten:"; echo "$left" >&2; }
say "done in $((SECONDS - start))s; next: go build ./... && go vet ./... && make lint"
