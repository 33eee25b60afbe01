
use builtin;
use str;

set edit:completion:arg-completer[infera] = {|@words|
    fn spaces {|n|
        builtin:repeat $n ' ' | str:join ''
    }
    fn cand {|text desc|
        edit:complex-candidate $text &display=$text' '(spaces (- 14 (wcswidth $text)))$desc
    }
    var command = 'infera'
    for word $words[1..-1] {
        if (str:has-prefix $word '-') {
            break
        }
        set command = $command';'$word
    }
    var completions = [
        &'infera'= {
            cand -v 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
            cand --verbose 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
            cand lint 'Audit manifests for configurations where a surge rollout would stall, gap or silently retire a serving pod'
            cand rules 'List the lint rules, or print one rule''s documentation'
            cand render 'Print the Deployments/LeaderWorkerSets the infera operator would create from an InferaDeployment, annotated with the predicted rollout strategy'
            cand rollout 'Drive a worker rollout step by step: surge, wait for /ready, retire the old pod, one leg at a time'
            cand audit 'Sample readiness and routability per role while someone else rolls, and report the minimum number of Ready and routable pods'
            cand drain 'Drain node(s) as a rollout: plan every pod on them, move the serving workers surge-first, evict the rest honouring PodDisruptionBudgets'
            cand sim 'A local simulated cluster that speaks the real Kubernetes API'
            cand demo 'Roll a worker on the built-in simulated cluster and show the evidence'
            cand monitor 'Audit continuously as a service: Prometheus metrics per role on `/metrics`, alert rules (`--print-rules`), in-cluster manifests (`--print-manifests`)'
            cand rbac 'Print the minimal RBAC Role that `infera rollout` and `infera audit` need'
            cand policy 'Print lint''s rules as ValidatingAdmissionPolicies and their bindings (`kubectl infera policy | kubectl apply -f -`)'
            cand completions 'Print a shell completion script to stdout'
            cand generate 'Regenerate `completions/` and `man/` from these flag definitions, and the rules table of `docs/lint.md` from the rule registry'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'infera;lint'= {
            cand -o 'Output format'
            cand --format 'Output format'
            cand --node-gpus 'GPUs per node assumed by the capacity rules when no `--nodes` is given'
            cand --nodes 'Node inventory: the output of `kubectl get nodes -o yaml`'
            cand --config 'Config file (default: `.infera-lint.yaml` found upward from the cwd)'
            cand --select 'Only run these rules (codes or names, comma-separated or repeated)'
            cand --ignore 'Do not run these rules (codes or names, comma-separated or repeated)'
            cand --fail-on 'Exit 1 when a finding at or above this severity is reported'
            cand -j 'Lint this many files at once. 0 (the default) picks one thread per CPU, or `RAYON_NUM_THREADS` when it is set'
            cand --threads 'Lint this many files at once. 0 (the default) picks one thread per CPU, or `RAYON_NUM_THREADS` when it is set'
            cand --operator 'The operator generation to predict (default: the config''s `operator`, else latest). With `--cluster` it is read off the live workers and this only applies where they do not tell'
            cand --values 'Helm charts: a values file passed to `helm template --values` (repeatable, in order)'
            cand --set 'Helm charts: a value passed to `helm template --set` (repeatable, in order)'
            cand --helm 'The helm that renders directories holding `Chart.yaml` (default: `helm` on `PATH`; without one, charts are skipped and named)'
            cand --kubectl 'The kubectl whose `kubectl kustomize` renders directories holding `kustomization.yaml` (default: `kubectl` on `PATH`)'
            cand --kubeconfig 'Path to the kubeconfig file to use'
            cand --context 'The name of the kubeconfig context to use'
            cand -n 'The namespace scope for this request (default: the context''s namespace)'
            cand --namespace 'The namespace scope for this request (default: the context''s namespace)'
            cand --cluster 'Lint the live objects of a cluster instead of files'
            cand -A 'With `--cluster`: every namespace'
            cand --all-namespaces 'With `--cluster`: every namespace'
            cand -v 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
            cand --verbose 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'infera;rules'= {
            cand --json 'Print as JSON instead of text'
            cand -v 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
            cand --verbose 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'infera;render'= {
            cand -o 'Output format'
            cand --output 'Output format'
            cand --operator 'The operator generation to render as (default: the `operator` key of `.infera-lint.yaml` found upward from the cwd, else latest)'
            cand -v 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
            cand --verbose 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'infera;rollout'= {
            cand -v 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
            cand --verbose 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
            cand restart 'Restart the worker pods of TARGET, one service at a time'
            cand set-image 'Change the image of `--service` in TARGET and roll it'
            cand history 'Print the last rollouts infera drove on TARGET, newest first'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'infera;rollout;restart'= {
            cand --service 'Service of the InferaDeployment to roll (repeatable; default: every worker service)'
            cand --set-env 'Also set this environment variable on the main container (repeatable)'
            cand --order 'Order of the legs (services), comma-separated'
            cand --pause-between 'Where to stop and ask before going on'
            cand --step-timeout 'Give up on a single step after this long'
            cand --stall-after 'A surge pod Unschedulable for this long is a stall'
            cand --on-stall 'What to do on a stall'
            cand -o 'Output format on stdout (`json`: JSON lines, for a log collector or another program; stderr keeps the file notes)'
            cand --output 'Output format on stdout (`json`: JSON lines, for a log collector or another program; stderr keeps the file notes)'
            cand --sample-interval 'Seconds between two readiness samples (the field check uses 10 s)'
            cand --min-ready 'A role below this many Ready or routable pods counts as a gap'
            cand --report 'Write the report to FILE: `.html` writes a self-contained incident report page (plan, steps, per-role table, verdict, chart), any other name the JSON report'
            cand --timeline 'Write the timeline to FILE: `.svg` draws a chart, `.csv` writes rows. Repeat for both'
            cand --traffic-rate 'Requests per second (at most 50)'
            cand --traffic-concurrency 'At most this many requests in flight; a tick that finds them all busy sends nothing and is counted'
            cand --traffic-deadline 'Each request''s deadline: past it, it is `hung`'
            cand --traffic-service 'The Service to send to, through the API server''s service proxy (default: the InferaDeployment''s `componentType: server` service)'
            cand --traffic-url 'A base URL to send to directly (an ingress, a port-forward) instead of the API server''s proxy; no control probe runs beside it'
            cand --traffic-model 'The model to ask for (default: the first of `/v1/models`)'
            cand --traffic-log 'Write one JSON line per request to FILE'
            cand --kubeconfig 'Path to the kubeconfig file to use'
            cand --context 'The name of the kubeconfig context to use'
            cand -n 'The namespace scope for this request (default: the context''s namespace)'
            cand --namespace 'The namespace scope for this request (default: the context''s namespace)'
            cand --surge 'Plain Deployment only: set maxSurge 1 / maxUnavailable 0 first'
            cand --dry-run 'Print the plan and stop, changing nothing; exit 3 when the roll would be refused (a predicted GAP or STALL without --force), else 0'
            cand --force 'Proceed even when the preflight predicts a stall or a gap'
            cand -y 'Do not ask for confirmation'
            cand --yes 'Do not ask for confirmation'
            cand --abort 'Undo the current leg of an interrupted rollout (restore the previous template on the target, so the old pods keep serving) and forget it'
            cand --traffic 'Send OpenAI-compatible requests (streaming chat completions and completions, alternating) through the serving path while this runs and account for every one: a request that fails makes the verdict a gap (exit 1) even when the pod counts held. The path must answer 5 requests in a row first, or nothing starts (exit 3)'
            cand -v 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
            cand --verbose 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'infera;rollout;set-image'= {
            cand --service 'Service of the InferaDeployment to roll (repeatable; default: every worker service)'
            cand --set-env 'Also set this environment variable on the main container (repeatable)'
            cand --order 'Order of the legs (services), comma-separated'
            cand --pause-between 'Where to stop and ask before going on'
            cand --step-timeout 'Give up on a single step after this long'
            cand --stall-after 'A surge pod Unschedulable for this long is a stall'
            cand --on-stall 'What to do on a stall'
            cand -o 'Output format on stdout (`json`: JSON lines, for a log collector or another program; stderr keeps the file notes)'
            cand --output 'Output format on stdout (`json`: JSON lines, for a log collector or another program; stderr keeps the file notes)'
            cand --sample-interval 'Seconds between two readiness samples (the field check uses 10 s)'
            cand --min-ready 'A role below this many Ready or routable pods counts as a gap'
            cand --report 'Write the report to FILE: `.html` writes a self-contained incident report page (plan, steps, per-role table, verdict, chart), any other name the JSON report'
            cand --timeline 'Write the timeline to FILE: `.svg` draws a chart, `.csv` writes rows. Repeat for both'
            cand --traffic-rate 'Requests per second (at most 50)'
            cand --traffic-concurrency 'At most this many requests in flight; a tick that finds them all busy sends nothing and is counted'
            cand --traffic-deadline 'Each request''s deadline: past it, it is `hung`'
            cand --traffic-service 'The Service to send to, through the API server''s service proxy (default: the InferaDeployment''s `componentType: server` service)'
            cand --traffic-url 'A base URL to send to directly (an ingress, a port-forward) instead of the API server''s proxy; no control probe runs beside it'
            cand --traffic-model 'The model to ask for (default: the first of `/v1/models`)'
            cand --traffic-log 'Write one JSON line per request to FILE'
            cand --kubeconfig 'Path to the kubeconfig file to use'
            cand --context 'The name of the kubeconfig context to use'
            cand -n 'The namespace scope for this request (default: the context''s namespace)'
            cand --namespace 'The namespace scope for this request (default: the context''s namespace)'
            cand --surge 'Plain Deployment only: set maxSurge 1 / maxUnavailable 0 first'
            cand --dry-run 'Print the plan and stop, changing nothing; exit 3 when the roll would be refused (a predicted GAP or STALL without --force), else 0'
            cand --force 'Proceed even when the preflight predicts a stall or a gap'
            cand -y 'Do not ask for confirmation'
            cand --yes 'Do not ask for confirmation'
            cand --abort 'Undo the current leg of an interrupted rollout (restore the previous template on the target, so the old pods keep serving) and forget it'
            cand --traffic 'Send OpenAI-compatible requests (streaming chat completions and completions, alternating) through the serving path while this runs and account for every one: a request that fails makes the verdict a gap (exit 1) even when the pod counts held. The path must answer 5 requests in a row first, or nothing starts (exit 3)'
            cand -v 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
            cand --verbose 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'infera;rollout;history'= {
            cand -o 'o'
            cand --output 'output'
            cand --kubeconfig 'Path to the kubeconfig file to use'
            cand --context 'The name of the kubeconfig context to use'
            cand -n 'The namespace scope for this request (default: the context''s namespace)'
            cand --namespace 'The namespace scope for this request (default: the context''s namespace)'
            cand -v 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
            cand --verbose 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'infera;rollout;help'= {
            cand restart 'Restart the worker pods of TARGET, one service at a time'
            cand set-image 'Change the image of `--service` in TARGET and roll it'
            cand history 'Print the last rollouts infera drove on TARGET, newest first'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'infera;rollout;help;restart'= {
        }
        &'infera;rollout;help;set-image'= {
        }
        &'infera;rollout;help;history'= {
        }
        &'infera;rollout;help;help'= {
        }
        &'infera;audit'= {
            cand -l 'Audit every InferaDeployment and Deployment matching this label selector (`model=kimi`, `tier in (a,b)`) instead of naming TARGETs; Deployments the infera operator rendered are audited through their InferaDeployment'
            cand --selector 'Audit every InferaDeployment and Deployment matching this label selector (`model=kimi`, `tier in (a,b)`) instead of naming TARGETs; Deployments the infera operator rendered are audited through their InferaDeployment'
            cand --for 'Audit for this long. Alone: the window is audited to its end (exit 0 or 1). With `--until-complete`: the longest to wait for completion; reaching it first is a timeout (exit 3)'
            cand --role 'For one plain Deployment: a role and the label selector of its pods (repeatable), e.g. `--role decode=app=dec`'
            cand --samples 'Stream every sample to FILE as CSV (one target; for several, `--timeline FILE.csv` has every target''s rows)'
            cand --sample-interval 'Seconds between two readiness samples (the field check uses 10 s)'
            cand --min-ready 'A role below this many Ready or routable pods counts as a gap'
            cand --report 'Write the report to FILE: `.html` writes a self-contained incident report page (plan, steps, per-role table, verdict, chart), any other name the JSON report'
            cand --timeline 'Write the timeline to FILE: `.svg` draws a chart, `.csv` writes rows. Repeat for both'
            cand --traffic-rate 'Requests per second (at most 50)'
            cand --traffic-concurrency 'At most this many requests in flight; a tick that finds them all busy sends nothing and is counted'
            cand --traffic-deadline 'Each request''s deadline: past it, it is `hung`'
            cand --traffic-service 'The Service to send to, through the API server''s service proxy (default: the InferaDeployment''s `componentType: server` service)'
            cand --traffic-url 'A base URL to send to directly (an ingress, a port-forward) instead of the API server''s proxy; no control probe runs beside it'
            cand --traffic-model 'The model to ask for (default: the first of `/v1/models`)'
            cand --traffic-log 'Write one JSON line per request to FILE'
            cand --kubeconfig 'Path to the kubeconfig file to use'
            cand --context 'The name of the kubeconfig context to use'
            cand -n 'The namespace scope for this request (default: the context''s namespace)'
            cand --namespace 'The namespace scope for this request (default: the context''s namespace)'
            cand -A 'Select in every namespace (one cluster-wide pod watch) instead of the `-n` namespace. Without `-l`: every InferaDeployment and Deployment'
            cand --all-namespaces 'Select in every namespace (one cluster-wide pod watch) instead of the `-n` namespace. Without `-l`: every InferaDeployment and Deployment'
            cand --until-complete 'Audit until every Deployment of every TARGET is complete as `kubectl rollout status` decides it (observedGeneration caught up, all replicas updated and available, no old replicas) and has stayed so for 20 s, longer than the operator''s reconcile period. A Deployment past its progress deadline ends the audit as stalled (exit 3)'
            cand --traffic 'Send OpenAI-compatible requests (streaming chat completions and completions, alternating) through the serving path while this runs and account for every one: a request that fails makes the verdict a gap (exit 1) even when the pod counts held. The path must answer 5 requests in a row first, or nothing starts (exit 3)'
            cand -v 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
            cand --verbose 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'infera;drain'= {
            cand -l 'Drain the nodes matching this label selector instead'
            cand --selector 'Drain the nodes matching this label selector instead'
            cand --pod-selector 'Only evict pods matching this label selector (`key=value[,…]`)'
            cand --grace-period 'Seconds each evicted pod gets to terminate (negative: its own terminationGracePeriodSeconds)'
            cand --timeout 'Give up after this long, one deadline from the cordon over the moves, the evictions and the wait (0: wait for ever); the node stays cordoned'
            cand --dry-run 'kubectl''s: `none` (drain), `client` (print the plan, send nothing that changes anything) or `server` (send the cordon and the evictions with dryRun=All: the API server checks them and persists nothing). Bare `--dry-run` is `client`, with kubectl''s deprecation warning'
            cand --stall-after 'A moved worker''s surge pod Unschedulable for this long is a stall'
            cand --step-timeout 'Give up on a single step of a move after this long'
            cand -o 'Output format on stdout (`json`: JSON lines, as `rollout -o json`)'
            cand --output 'Output format on stdout (`json`: JSON lines, as `rollout -o json`)'
            cand --traffic-rate 'Requests per second (at most 50)'
            cand --traffic-concurrency 'At most this many requests in flight; a tick that finds them all busy sends nothing and is counted'
            cand --traffic-deadline 'Each request''s deadline: past it, it is `hung`'
            cand --traffic-service 'The Service to send to, through the API server''s service proxy (default: the InferaDeployment''s `componentType: server` service)'
            cand --traffic-url 'A base URL to send to directly (an ingress, a port-forward) instead of the API server''s proxy; no control probe runs beside it'
            cand --traffic-model 'The model to ask for (default: the first of `/v1/models`)'
            cand --traffic-log 'Write one JSON line per request to FILE'
            cand --sample-interval 'Seconds between two readiness samples (the field check uses 10 s)'
            cand --min-ready 'A role below this many Ready or routable pods counts as a gap'
            cand --report 'Write the report to FILE: `.html` writes a self-contained incident report page (plan, steps, per-role table, verdict, chart), any other name the JSON report'
            cand --timeline 'Write the timeline to FILE: `.svg` draws a chart, `.csv` writes rows. Repeat for both'
            cand --kubeconfig 'Path to the kubeconfig file to use'
            cand --context 'The name of the kubeconfig context to use'
            cand -n 'The namespace scope for this request (default: the context''s namespace)'
            cand --namespace 'The namespace scope for this request (default: the context''s namespace)'
            cand --ignore-daemonsets 'Leave DaemonSet-managed pods (otherwise the drain is refused)'
            cand --delete-emptydir-data 'Evict pods with emptyDir volumes (their data is lost)'
            cand --force 'Drain despite a predicted GAP or STALL, and evict pods that declare no controller'
            cand --traffic 'Send OpenAI-compatible requests (streaming chat completions and completions, alternating) through the serving path while this runs and account for every one: a request that fails makes the verdict a gap (exit 1) even when the pod counts held. The path must answer 5 requests in a row first, or nothing starts (exit 3)'
            cand -v 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
            cand --verbose 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'infera;sim'= {
            cand -v 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
            cand --verbose 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
            cand serve 'Serve a simulated cluster until interrupted'
            cand attach 'Attach the simulated world (GPU nodes, kubelet, infera operator) to any Kubernetes API server, until interrupted'
            cand scenarios 'List the built-in scenarios'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'infera;sim;serve'= {
            cand --clock-skew 'Run the cluster''s clock this far off the host''s (`-300s`, `90s`): every timestamp it writes and every `Date` header, as a control plane with a skewed clock (for testing clients'' skew handling)'
            cand --truth 'Write the simulator''s ground truth (every InferaDeployment service''s Ready and routable counts, at every change; every request the simulated routers received and how it ended) to FILE when it stops'
            cand --scenario 'Built-in scenario name or a scenario file'
            cand --port 'Port on 127.0.0.1 (0 picks a free one)'
            cand --token 'Bearer token clients must present (default: a random one)'
            cand --kubeconfig-out 'Write a kubeconfig for the simulator to PATH'
            cand --speed 'Simulated seconds per wall-clock second'
            cand --seed 'Random seed (default: the scenario''s)'
            cand --operator 'The operator generation the simulated operator renders as (default: the scenario''s `operator`, else latest)'
            cand --event-ttl 'Delete each Event this long after its last write, in simulated time (kube-apiserver''s `--event-ttl`; watchers see it DELETED). `0` keeps Events'
            cand --drop-watches-every 'Drop every watch stream every this long (wall clock)'
            cand --error-rate 'Answer this fraction of requests (0..1) with 5xx/429 bursts carrying `Retry-After`'
            cand --conflict-rate 'Answer this fraction of updates with 409 Conflict'
            cand --compact-every 'Compact the watch history every this long, forcing 410 Gone on resume'
            cand --latency 'Add this latency to every request'
            cand --restart-api-every 'Restart the API server listener every this long (state is kept)'
            cand --cut 'Cut the clients off the API server AT after the start FOR this long: open connections are reset, new ones refused; the cluster goes on (repeatable; e.g. `--cut 30s:55s`)'
            cand --blackhole 'Blackhole the clients'' connections AT after the start FOR this long: held open, nothing delivered either way until it ends (repeatable)'
            cand --plain-http 'Serve plain HTTP instead of HTTPS with a generated CA. kubectl does not send a bearer token over plain HTTP, so only `kube`-based clients and curl can authenticate then'
            cand --no-world 'Serve an empty cluster (API server, Deployment/ReplicaSet controllers, scheduler, GC): no nodes, no manifests, no kubelet or operator, for `infera sim attach` to bring them'
            cand -v 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
            cand --verbose 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'infera;sim;attach'= {
            cand --kubeconfig 'Kubeconfig of the cluster to attach to (default: KUBECONFIG, then ~/.kube/config)'
            cand --context 'Kubeconfig context (default: the current one)'
            cand --scenario 'Built-in scenario name or a scenario file'
            cand --speed 'Simulated seconds per wall-clock second, for the world (image pulls, weight loads, probes); the control plane runs in real time'
            cand --pod-cidr 'Pod IPs come from this range; listeners bind there, so it must be local to this machine (e.g. `127.77.0.0/16`, or a range routed to `lo` in the lab''s network namespace)'
            cand --operator 'The operator generation the simulated operator renders as (default: the scenario''s `operator`, else latest)'
            cand --truth 'On exit, write every request the simulated routers received and how it ended to FILE (the ground truth''s `{"requests": […]}`; the pods'' truth is the API server''s own)'
            cand --no-operator 'Do not run the infera operator (a real one runs in the cluster; its pods need the simulated nodes'' toleration, or `--no-taint`)'
            cand --no-taint 'Do not taint the simulated nodes'
            cand --cleanup 'Remove what attach creates for the scenario (nodes, Leases, applied objects), then exit'
            cand -v 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
            cand --verbose 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'infera;sim;scenarios'= {
            cand -v 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
            cand --verbose 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'infera;sim;help'= {
            cand serve 'Serve a simulated cluster until interrupted'
            cand attach 'Attach the simulated world (GPU nodes, kubelet, infera operator) to any Kubernetes API server, until interrupted'
            cand scenarios 'List the built-in scenarios'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'infera;sim;help;serve'= {
        }
        &'infera;sim;help;attach'= {
        }
        &'infera;sim;help;scenarios'= {
        }
        &'infera;sim;help;help'= {
        }
        &'infera;demo'= {
            cand --scenario 'Built-in scenario name (see `infera sim scenarios`) or a scenario file'
            cand --speed 'Simulated seconds per wall-clock second'
            cand --stall-after 'A surge pod Unschedulable for this long (simulated time) is a stall'
            cand --sample-interval 'Seconds between two readiness samples (the field check uses 10 s)'
            cand --min-ready 'A role below this many Ready or routable pods counts as a gap'
            cand --report 'Write the report to FILE: `.html` writes a self-contained incident report page (plan, steps, per-role table, verdict, chart), any other name the JSON report'
            cand --timeline 'Write the timeline to FILE: `.svg` draws a chart, `.csv` writes rows. Repeat for both'
            cand --no-traffic 'Send no requests through the serving path (by default the demo sends them and prints their tally, as `--traffic` does)'
            cand -v 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
            cand --verbose 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'infera;monitor'= {
            cand -l 'Only the InferaDeployments, Deployments and StatefulSets whose labels match this selector (`team=a`, `tier in (a,b)`, `!canary`)'
            cand --selector 'Only the InferaDeployments, Deployments and StatefulSets whose labels match this selector (`team=a`, `tier in (a,b)`, `!canary`)'
            cand --min-ready 'A role with fewer Ready or routable pods than this is below the floor (the below-floor counters and alert)'
            cand --listen 'Serve `/metrics`, `/healthz` and `/readyz` on this address (`0.0.0.0:8491` in a pod; port 0 picks a free one)'
            cand --format 'With `--print-rules`: a PrometheusRule, or a plain rules file'
            cand --image 'Image of the monitor''s Deployment (`--print-manifests`)'
            cand --no-routable-for 'Alert: a role with no routable pod this long (critical)'
            cand --below-min-for 'Alert: a rolling role below `--min-ready` this long'
            cand --stalled-for 'Alert: a pod of a rolling role unschedulable this long (a stalled surge; `infera rollout --stall-after` is 5m too)'
            cand --ready-not-routable-for 'Alert: Ready pods not routable this long (readiness that means nothing)'
            cand --watch-down-for 'Alert: a watch of the monitor not current this long'
            cand --request-failure-ratio 'Alert: the failure ratio of attributed probe requests over 5m above this (a fraction: 0.01 is 1 %)'
            cand --request-failures-for 'Alert: that ratio above its threshold this long'
            cand --probe-interval 'Send one small OpenAI request through the router of each InferaDeployment in scope this often (at least 1s), beside a control request to the API server''s /readyz'
            cand --kubeconfig 'Path to the kubeconfig file to use'
            cand --context 'The name of the kubeconfig context to use'
            cand -n 'The namespace scope for this request (default: the context''s namespace)'
            cand --namespace 'The namespace scope for this request (default: the context''s namespace)'
            cand -A 'Watch every namespace (one cluster-wide list+watch per resource) instead of the `-n` namespace'
            cand --all-namespaces 'Watch every namespace (one cluster-wide list+watch per resource) instead of the `-n` namespace'
            cand --print-rules 'Print the alert rules and exit'
            cand --print-manifests 'Print the ServiceAccount, RBAC, Deployment, Service and ServiceMonitor that run the monitor in the `-n` namespace, and exit'
            cand --no-probe 'Send no requests (no infera_requests_total, no TTFT)'
            cand -v 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
            cand --verbose 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'infera;rbac'= {
            cand -n 'Namespace of the Role (and of the ServiceAccount the bindings name) (default: the context''s namespace)'
            cand --namespace 'Namespace of the Role (and of the ServiceAccount the bindings name) (default: the context''s namespace)'
            cand -o 'Output format'
            cand --output 'Output format'
            cand -A 'Grant the Role''s rules in every namespace (a ClusterRole and ClusterRoleBinding instead), for `audit -A` and `lint --cluster -A`'
            cand --all-namespaces 'Grant the Role''s rules in every namespace (a ClusterRole and ClusterRoleBinding instead), for `audit -A` and `lint --cluster -A`'
            cand --drain 'Print what `infera drain` needs: the same rules in every namespace (it moves and evicts wherever a pod runs) and the `infera-drain` ClusterRole (nodes, evictions, PodDisruptionBudgets, owners)'
            cand --traffic 'Also grant what `--traffic` sends through the API server''s service proxy to the router (`get` and `create` on `services/proxy`)'
            cand -v 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
            cand --verbose 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'infera;policy'= {
            cand -o 'Output format'
            cand --output 'Output format'
            cand --operator 'The operator generation whose rendering the InferaDeployment checks follow (default: the `operator` key of `.infera-lint.yaml` found upward from the cwd, else latest)'
            cand --fail-on 'Deny findings at or above this severity (below it: warn); `never` denies nothing'
            cand --action 'What the bindings do: by severity (`--fail-on`), or warn only'
            cand -v 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
            cand --verbose 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'infera;completions'= {
            cand -v 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
            cand --verbose 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'infera;generate'= {
            cand --dir 'Directory holding `completions/`, `man/` and `docs/lint.md`'
            cand -v 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
            cand --verbose 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'infera;help'= {
            cand lint 'Audit manifests for configurations where a surge rollout would stall, gap or silently retire a serving pod'
            cand rules 'List the lint rules, or print one rule''s documentation'
            cand render 'Print the Deployments/LeaderWorkerSets the infera operator would create from an InferaDeployment, annotated with the predicted rollout strategy'
            cand rollout 'Drive a worker rollout step by step: surge, wait for /ready, retire the old pod, one leg at a time'
            cand audit 'Sample readiness and routability per role while someone else rolls, and report the minimum number of Ready and routable pods'
            cand drain 'Drain node(s) as a rollout: plan every pod on them, move the serving workers surge-first, evict the rest honouring PodDisruptionBudgets'
            cand sim 'A local simulated cluster that speaks the real Kubernetes API'
            cand demo 'Roll a worker on the built-in simulated cluster and show the evidence'
            cand monitor 'Audit continuously as a service: Prometheus metrics per role on `/metrics`, alert rules (`--print-rules`), in-cluster manifests (`--print-manifests`)'
            cand rbac 'Print the minimal RBAC Role that `infera rollout` and `infera audit` need'
            cand policy 'Print lint''s rules as ValidatingAdmissionPolicies and their bindings (`kubectl infera policy | kubectl apply -f -`)'
            cand completions 'Print a shell completion script to stdout'
            cand generate 'Regenerate `completions/` and `man/` from these flag definitions, and the rules table of `docs/lint.md` from the rule registry'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'infera;help;lint'= {
        }
        &'infera;help;rules'= {
        }
        &'infera;help;render'= {
        }
        &'infera;help;rollout'= {
            cand restart 'Restart the worker pods of TARGET, one service at a time'
            cand set-image 'Change the image of `--service` in TARGET and roll it'
            cand history 'Print the last rollouts infera drove on TARGET, newest first'
        }
        &'infera;help;rollout;restart'= {
        }
        &'infera;help;rollout;set-image'= {
        }
        &'infera;help;rollout;history'= {
        }
        &'infera;help;audit'= {
        }
        &'infera;help;drain'= {
        }
        &'infera;help;sim'= {
            cand serve 'Serve a simulated cluster until interrupted'
            cand attach 'Attach the simulated world (GPU nodes, kubelet, infera operator) to any Kubernetes API server, until interrupted'
            cand scenarios 'List the built-in scenarios'
        }
        &'infera;help;sim;serve'= {
        }
        &'infera;help;sim;attach'= {
        }
        &'infera;help;sim;scenarios'= {
        }
        &'infera;help;demo'= {
        }
        &'infera;help;monitor'= {
        }
        &'infera;help;rbac'= {
        }
        &'infera;help;policy'= {
        }
        &'infera;help;completions'= {
        }
        &'infera;help;generate'= {
        }
        &'infera;help;help'= {
        }
    ]
    $completions[$command]
}
