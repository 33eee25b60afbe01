# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_infera_global_optspecs
    string join \n v/verbose h/help V/version
end

function __fish_infera_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_infera_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_infera_using_subcommand
    set -l cmd (__fish_infera_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c infera -n "__fish_infera_needs_command" -s v -l verbose -d 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
complete -c infera -n "__fish_infera_needs_command" -s h -l help -d 'Print help'
complete -c infera -n "__fish_infera_needs_command" -s V -l version -d 'Print version'
complete -c infera -n "__fish_infera_needs_command" -f -a "lint" -d 'Audit manifests for configurations where a surge rollout would stall, gap or silently retire a serving pod'
complete -c infera -n "__fish_infera_needs_command" -f -a "rules" -d 'List the lint rules, or print one rule\'s documentation'
complete -c infera -n "__fish_infera_needs_command" -f -a "render" -d 'Print the Deployments/LeaderWorkerSets the infera operator would create from an InferaDeployment, annotated with the predicted rollout strategy'
complete -c infera -n "__fish_infera_needs_command" -f -a "rollout" -d 'Drive a worker rollout step by step: surge, wait for /ready, retire the old pod, one leg at a time'
complete -c infera -n "__fish_infera_needs_command" -f -a "audit" -d 'Sample readiness and routability per role while someone else rolls, and report the minimum number of Ready and routable pods'
complete -c infera -n "__fish_infera_needs_command" -f -a "drain" -d 'Drain node(s) as a rollout: plan every pod on them, move the serving workers surge-first, evict the rest honouring PodDisruptionBudgets'
complete -c infera -n "__fish_infera_needs_command" -f -a "sim" -d 'A local simulated cluster that speaks the real Kubernetes API'
complete -c infera -n "__fish_infera_needs_command" -f -a "demo" -d 'Roll a worker on the built-in simulated cluster and show the evidence'
complete -c infera -n "__fish_infera_needs_command" -f -a "monitor" -d 'Audit continuously as a service: Prometheus metrics per role on `/metrics`, alert rules (`--print-rules`), in-cluster manifests (`--print-manifests`)'
complete -c infera -n "__fish_infera_needs_command" -f -a "rbac" -d 'Print the minimal RBAC Role that `infera rollout` and `infera audit` need'
complete -c infera -n "__fish_infera_needs_command" -f -a "policy" -d 'Print lint\'s rules as ValidatingAdmissionPolicies and their bindings (`kubectl infera policy | kubectl apply -f -`)'
complete -c infera -n "__fish_infera_needs_command" -f -a "completions" -d 'Print a shell completion script to stdout'
complete -c infera -n "__fish_infera_needs_command" -f -a "generate" -d 'Regenerate `completions/` and `man/` from these flag definitions, and the rules table of `docs/lint.md` from the rule registry'
complete -c infera -n "__fish_infera_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c infera -n "__fish_infera_using_subcommand lint" -s o -l format -d 'Output format' -r -f -a "human\t'Code frames and a summary table (colour on a TTY, honouring NO_COLOR)'
json\t'One JSON document: `{"findings": [...], "summary": {...}}`'
sarif\t'SARIF 2.1.0, for GitHub code scanning'
github\t'GitHub Actions workflow annotation lines'"
complete -c infera -n "__fish_infera_using_subcommand lint" -l node-gpus -d 'GPUs per node assumed by the capacity rules when no `--nodes` is given' -r
complete -c infera -n "__fish_infera_using_subcommand lint" -l nodes -d 'Node inventory: the output of `kubectl get nodes -o yaml`' -r -F
complete -c infera -n "__fish_infera_using_subcommand lint" -l config -d 'Config file (default: `.infera-lint.yaml` found upward from the cwd)' -r -F
complete -c infera -n "__fish_infera_using_subcommand lint" -l select -d 'Only run these rules (codes or names, comma-separated or repeated)' -r
complete -c infera -n "__fish_infera_using_subcommand lint" -l ignore -d 'Do not run these rules (codes or names, comma-separated or repeated)' -r
complete -c infera -n "__fish_infera_using_subcommand lint" -l fail-on -d 'Exit 1 when a finding at or above this severity is reported' -r -f -a "warning\t''
error\t''
never\t''"
complete -c infera -n "__fish_infera_using_subcommand lint" -s j -l threads -d 'Lint this many files at once. 0 (the default) picks one thread per CPU, or `RAYON_NUM_THREADS` when it is set' -r
complete -c infera -n "__fish_infera_using_subcommand lint" -l operator -d 'The operator generation to predict (default: the config\'s `operator`, else latest). With `--cluster` it is read off the live workers and this only applies where they do not tell' -r -f -a "pre-176\t'Before PR #176: surge-free, /health on the engine port'
176\t'PR #176 and later: surge-first when probed /ready on the readiness port'
latest\t'The newest generation infera knows (176)'"
complete -c infera -n "__fish_infera_using_subcommand lint" -l values -d 'Helm charts: a values file passed to `helm template --values` (repeatable, in order)' -r -F
complete -c infera -n "__fish_infera_using_subcommand lint" -l set -d 'Helm charts: a value passed to `helm template --set` (repeatable, in order)' -r
complete -c infera -n "__fish_infera_using_subcommand lint" -l helm -d 'The helm that renders directories holding `Chart.yaml` (default: `helm` on `PATH`; without one, charts are skipped and named)' -r -F
complete -c infera -n "__fish_infera_using_subcommand lint" -l kubectl -d 'The kubectl whose `kubectl kustomize` renders directories holding `kustomization.yaml` (default: `kubectl` on `PATH`)' -r -F
complete -c infera -n "__fish_infera_using_subcommand lint" -l kubeconfig -d 'Path to the kubeconfig file to use' -r -F
complete -c infera -n "__fish_infera_using_subcommand lint" -l context -d 'The name of the kubeconfig context to use' -r
complete -c infera -n "__fish_infera_using_subcommand lint" -s n -l namespace -d 'The namespace scope for this request (default: the context\'s namespace)' -r
complete -c infera -n "__fish_infera_using_subcommand lint" -l cluster -d 'Lint the live objects of a cluster instead of files'
complete -c infera -n "__fish_infera_using_subcommand lint" -s A -l all-namespaces -d 'With `--cluster`: every namespace'
complete -c infera -n "__fish_infera_using_subcommand lint" -s v -l verbose -d 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
complete -c infera -n "__fish_infera_using_subcommand lint" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c infera -n "__fish_infera_using_subcommand lint" -s V -l version -d 'Print version'
complete -c infera -n "__fish_infera_using_subcommand rules" -l json -d 'Print as JSON instead of text'
complete -c infera -n "__fish_infera_using_subcommand rules" -s v -l verbose -d 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
complete -c infera -n "__fish_infera_using_subcommand rules" -s h -l help -d 'Print help'
complete -c infera -n "__fish_infera_using_subcommand rules" -s V -l version -d 'Print version'
complete -c infera -n "__fish_infera_using_subcommand render" -s o -l output -d 'Output format' -r -f -a "yaml\t''
json\t''"
complete -c infera -n "__fish_infera_using_subcommand render" -l operator -d 'The operator generation to render as (default: the `operator` key of `.infera-lint.yaml` found upward from the cwd, else latest)' -r -f -a "pre-176\t'Before PR #176: surge-free, /health on the engine port'
176\t'PR #176 and later: surge-first when probed /ready on the readiness port'
latest\t'The newest generation infera knows (176)'"
complete -c infera -n "__fish_infera_using_subcommand render" -s v -l verbose -d 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
complete -c infera -n "__fish_infera_using_subcommand render" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c infera -n "__fish_infera_using_subcommand render" -s V -l version -d 'Print version'
complete -c infera -n "__fish_infera_using_subcommand rollout; and not __fish_seen_subcommand_from restart set-image history help" -s v -l verbose -d 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
complete -c infera -n "__fish_infera_using_subcommand rollout; and not __fish_seen_subcommand_from restart set-image history help" -s h -l help -d 'Print help'
complete -c infera -n "__fish_infera_using_subcommand rollout; and not __fish_seen_subcommand_from restart set-image history help" -s V -l version -d 'Print version'
complete -c infera -n "__fish_infera_using_subcommand rollout; and not __fish_seen_subcommand_from restart set-image history help" -f -a "restart" -d 'Restart the worker pods of TARGET, one service at a time'
complete -c infera -n "__fish_infera_using_subcommand rollout; and not __fish_seen_subcommand_from restart set-image history help" -f -a "set-image" -d 'Change the image of `--service` in TARGET and roll it'
complete -c infera -n "__fish_infera_using_subcommand rollout; and not __fish_seen_subcommand_from restart set-image history help" -f -a "history" -d 'Print the last rollouts infera drove on TARGET, newest first'
complete -c infera -n "__fish_infera_using_subcommand rollout; and not __fish_seen_subcommand_from restart set-image history help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from restart" -l service -d 'Service of the InferaDeployment to roll (repeatable; default: every worker service)' -r
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from restart" -l set-env -d 'Also set this environment variable on the main container (repeatable)' -r
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from restart" -l order -d 'Order of the legs (services), comma-separated' -r
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from restart" -l pause-between -d 'Where to stop and ask before going on' -r -f -a "legs\t''
pods\t''
never\t''"
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from restart" -l step-timeout -d 'Give up on a single step after this long' -r
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from restart" -l stall-after -d 'A surge pod Unschedulable for this long is a stall' -r
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from restart" -l on-stall -d 'What to do on a stall' -r -f -a "abort\t''
wait\t''"
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from restart" -s o -l output -d 'Output format on stdout (`json`: JSON lines, for a log collector or another program; stderr keeps the file notes)' -r -f -a "text\t'The plan, progress (bars on a terminal) and the report table'
json\t'One JSON object per line on stdout for every event (plan, note, start, event, step, stall, leg-done, finish), the last one `{"event":"result","exit":N,"report":{…}|null}`'"
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from restart" -l sample-interval -d 'Seconds between two readiness samples (the field check uses 10 s)' -r
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from restart" -l min-ready -d 'A role below this many Ready or routable pods counts as a gap' -r
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from restart" -l report -d 'Write the report to FILE: `.html` writes a self-contained incident report page (plan, steps, per-role table, verdict, chart), any other name the JSON report' -r -F
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from restart" -l timeline -d 'Write the timeline to FILE: `.svg` draws a chart, `.csv` writes rows. Repeat for both' -r -F
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from restart" -l traffic-rate -d 'Requests per second (at most 50)' -r
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from restart" -l traffic-concurrency -d 'At most this many requests in flight; a tick that finds them all busy sends nothing and is counted' -r
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from restart" -l traffic-deadline -d 'Each request\'s deadline: past it, it is `hung`' -r
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from restart" -l traffic-service -d 'The Service to send to, through the API server\'s service proxy (default: the InferaDeployment\'s `componentType: server` service)' -r
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from restart" -l traffic-url -d 'A base URL to send to directly (an ingress, a port-forward) instead of the API server\'s proxy; no control probe runs beside it' -r
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from restart" -l traffic-model -d 'The model to ask for (default: the first of `/v1/models`)' -r
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from restart" -l traffic-log -d 'Write one JSON line per request to FILE' -r -F
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from restart" -l kubeconfig -d 'Path to the kubeconfig file to use' -r -F
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from restart" -l context -d 'The name of the kubeconfig context to use' -r
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from restart" -s n -l namespace -d 'The namespace scope for this request (default: the context\'s namespace)' -r
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from restart" -l surge -d 'Plain Deployment only: set maxSurge 1 / maxUnavailable 0 first'
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from restart" -l dry-run -d 'Print the plan and stop, changing nothing; exit 3 when the roll would be refused (a predicted GAP or STALL without --force), else 0'
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from restart" -l force -d 'Proceed even when the preflight predicts a stall or a gap'
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from restart" -s y -l yes -d 'Do not ask for confirmation'
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from restart" -l abort -d 'Undo the current leg of an interrupted rollout (restore the previous template on the target, so the old pods keep serving) and forget it'
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from restart" -l traffic -d 'Send OpenAI-compatible requests (streaming chat completions and completions, alternating) through the serving path while this runs and account for every one: a request that fails makes the verdict a gap (exit 1) even when the pod counts held. The path must answer 5 requests in a row first, or nothing starts (exit 3)'
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from restart" -s v -l verbose -d 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from restart" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from restart" -s V -l version -d 'Print version'
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from set-image" -l service -d 'Service of the InferaDeployment to roll (repeatable; default: every worker service)' -r
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from set-image" -l set-env -d 'Also set this environment variable on the main container (repeatable)' -r
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from set-image" -l order -d 'Order of the legs (services), comma-separated' -r
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from set-image" -l pause-between -d 'Where to stop and ask before going on' -r -f -a "legs\t''
pods\t''
never\t''"
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from set-image" -l step-timeout -d 'Give up on a single step after this long' -r
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from set-image" -l stall-after -d 'A surge pod Unschedulable for this long is a stall' -r
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from set-image" -l on-stall -d 'What to do on a stall' -r -f -a "abort\t''
wait\t''"
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from set-image" -s o -l output -d 'Output format on stdout (`json`: JSON lines, for a log collector or another program; stderr keeps the file notes)' -r -f -a "text\t'The plan, progress (bars on a terminal) and the report table'
json\t'One JSON object per line on stdout for every event (plan, note, start, event, step, stall, leg-done, finish), the last one `{"event":"result","exit":N,"report":{…}|null}`'"
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from set-image" -l sample-interval -d 'Seconds between two readiness samples (the field check uses 10 s)' -r
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from set-image" -l min-ready -d 'A role below this many Ready or routable pods counts as a gap' -r
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from set-image" -l report -d 'Write the report to FILE: `.html` writes a self-contained incident report page (plan, steps, per-role table, verdict, chart), any other name the JSON report' -r -F
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from set-image" -l timeline -d 'Write the timeline to FILE: `.svg` draws a chart, `.csv` writes rows. Repeat for both' -r -F
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from set-image" -l traffic-rate -d 'Requests per second (at most 50)' -r
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from set-image" -l traffic-concurrency -d 'At most this many requests in flight; a tick that finds them all busy sends nothing and is counted' -r
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from set-image" -l traffic-deadline -d 'Each request\'s deadline: past it, it is `hung`' -r
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from set-image" -l traffic-service -d 'The Service to send to, through the API server\'s service proxy (default: the InferaDeployment\'s `componentType: server` service)' -r
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from set-image" -l traffic-url -d 'A base URL to send to directly (an ingress, a port-forward) instead of the API server\'s proxy; no control probe runs beside it' -r
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from set-image" -l traffic-model -d 'The model to ask for (default: the first of `/v1/models`)' -r
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from set-image" -l traffic-log -d 'Write one JSON line per request to FILE' -r -F
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from set-image" -l kubeconfig -d 'Path to the kubeconfig file to use' -r -F
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from set-image" -l context -d 'The name of the kubeconfig context to use' -r
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from set-image" -s n -l namespace -d 'The namespace scope for this request (default: the context\'s namespace)' -r
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from set-image" -l surge -d 'Plain Deployment only: set maxSurge 1 / maxUnavailable 0 first'
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from set-image" -l dry-run -d 'Print the plan and stop, changing nothing; exit 3 when the roll would be refused (a predicted GAP or STALL without --force), else 0'
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from set-image" -l force -d 'Proceed even when the preflight predicts a stall or a gap'
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from set-image" -s y -l yes -d 'Do not ask for confirmation'
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from set-image" -l abort -d 'Undo the current leg of an interrupted rollout (restore the previous template on the target, so the old pods keep serving) and forget it'
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from set-image" -l traffic -d 'Send OpenAI-compatible requests (streaming chat completions and completions, alternating) through the serving path while this runs and account for every one: a request that fails makes the verdict a gap (exit 1) even when the pod counts held. The path must answer 5 requests in a row first, or nothing starts (exit 3)'
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from set-image" -s v -l verbose -d 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from set-image" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from set-image" -s V -l version -d 'Print version'
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from history" -s o -l output -r -f -a "table\t'A table, newest first'
json\t'A JSON array, newest first'"
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from history" -l kubeconfig -d 'Path to the kubeconfig file to use' -r -F
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from history" -l context -d 'The name of the kubeconfig context to use' -r
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from history" -s n -l namespace -d 'The namespace scope for this request (default: the context\'s namespace)' -r
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from history" -s v -l verbose -d 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from history" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from history" -s V -l version -d 'Print version'
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from help" -f -a "restart" -d 'Restart the worker pods of TARGET, one service at a time'
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from help" -f -a "set-image" -d 'Change the image of `--service` in TARGET and roll it'
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from help" -f -a "history" -d 'Print the last rollouts infera drove on TARGET, newest first'
complete -c infera -n "__fish_infera_using_subcommand rollout; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c infera -n "__fish_infera_using_subcommand audit" -s l -l selector -d 'Audit every InferaDeployment and Deployment matching this label selector (`model=kimi`, `tier in (a,b)`) instead of naming TARGETs; Deployments the infera operator rendered are audited through their InferaDeployment' -r
complete -c infera -n "__fish_infera_using_subcommand audit" -l for -d 'Audit for this long. Alone: the window is audited to its end (exit 0 or 1). With `--until-complete`: the longest to wait for completion; reaching it first is a timeout (exit 3)' -r
complete -c infera -n "__fish_infera_using_subcommand audit" -l role -d 'For one plain Deployment: a role and the label selector of its pods (repeatable), e.g. `--role decode=app=dec`' -r
complete -c infera -n "__fish_infera_using_subcommand audit" -l samples -d 'Stream every sample to FILE as CSV (one target; for several, `--timeline FILE.csv` has every target\'s rows)' -r -F
complete -c infera -n "__fish_infera_using_subcommand audit" -l sample-interval -d 'Seconds between two readiness samples (the field check uses 10 s)' -r
complete -c infera -n "__fish_infera_using_subcommand audit" -l min-ready -d 'A role below this many Ready or routable pods counts as a gap' -r
complete -c infera -n "__fish_infera_using_subcommand audit" -l report -d 'Write the report to FILE: `.html` writes a self-contained incident report page (plan, steps, per-role table, verdict, chart), any other name the JSON report' -r -F
complete -c infera -n "__fish_infera_using_subcommand audit" -l timeline -d 'Write the timeline to FILE: `.svg` draws a chart, `.csv` writes rows. Repeat for both' -r -F
complete -c infera -n "__fish_infera_using_subcommand audit" -l traffic-rate -d 'Requests per second (at most 50)' -r
complete -c infera -n "__fish_infera_using_subcommand audit" -l traffic-concurrency -d 'At most this many requests in flight; a tick that finds them all busy sends nothing and is counted' -r
complete -c infera -n "__fish_infera_using_subcommand audit" -l traffic-deadline -d 'Each request\'s deadline: past it, it is `hung`' -r
complete -c infera -n "__fish_infera_using_subcommand audit" -l traffic-service -d 'The Service to send to, through the API server\'s service proxy (default: the InferaDeployment\'s `componentType: server` service)' -r
complete -c infera -n "__fish_infera_using_subcommand audit" -l traffic-url -d 'A base URL to send to directly (an ingress, a port-forward) instead of the API server\'s proxy; no control probe runs beside it' -r
complete -c infera -n "__fish_infera_using_subcommand audit" -l traffic-model -d 'The model to ask for (default: the first of `/v1/models`)' -r
complete -c infera -n "__fish_infera_using_subcommand audit" -l traffic-log -d 'Write one JSON line per request to FILE' -r -F
complete -c infera -n "__fish_infera_using_subcommand audit" -l kubeconfig -d 'Path to the kubeconfig file to use' -r -F
complete -c infera -n "__fish_infera_using_subcommand audit" -l context -d 'The name of the kubeconfig context to use' -r
complete -c infera -n "__fish_infera_using_subcommand audit" -s n -l namespace -d 'The namespace scope for this request (default: the context\'s namespace)' -r
complete -c infera -n "__fish_infera_using_subcommand audit" -s A -l all-namespaces -d 'Select in every namespace (one cluster-wide pod watch) instead of the `-n` namespace. Without `-l`: every InferaDeployment and Deployment'
complete -c infera -n "__fish_infera_using_subcommand audit" -l until-complete -d 'Audit until every Deployment of every TARGET is complete as `kubectl rollout status` decides it (observedGeneration caught up, all replicas updated and available, no old replicas) and has stayed so for 20 s, longer than the operator\'s reconcile period. A Deployment past its progress deadline ends the audit as stalled (exit 3)'
complete -c infera -n "__fish_infera_using_subcommand audit" -l traffic -d 'Send OpenAI-compatible requests (streaming chat completions and completions, alternating) through the serving path while this runs and account for every one: a request that fails makes the verdict a gap (exit 1) even when the pod counts held. The path must answer 5 requests in a row first, or nothing starts (exit 3)'
complete -c infera -n "__fish_infera_using_subcommand audit" -s v -l verbose -d 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
complete -c infera -n "__fish_infera_using_subcommand audit" -s h -l help -d 'Print help'
complete -c infera -n "__fish_infera_using_subcommand audit" -s V -l version -d 'Print version'
complete -c infera -n "__fish_infera_using_subcommand drain" -s l -l selector -d 'Drain the nodes matching this label selector instead' -r
complete -c infera -n "__fish_infera_using_subcommand drain" -l pod-selector -d 'Only evict pods matching this label selector (`key=value[,…]`)' -r
complete -c infera -n "__fish_infera_using_subcommand drain" -l grace-period -d 'Seconds each evicted pod gets to terminate (negative: its own terminationGracePeriodSeconds)' -r
complete -c infera -n "__fish_infera_using_subcommand drain" -l timeout -d 'Give up after this long, one deadline from the cordon over the moves, the evictions and the wait (0: wait for ever); the node stays cordoned' -r
complete -c infera -n "__fish_infera_using_subcommand drain" -l dry-run -d 'kubectl\'s: `none` (drain), `client` (print the plan, send nothing that changes anything) or `server` (send the cordon and the evictions with dryRun=All: the API server checks them and persists nothing). Bare `--dry-run` is `client`, with kubectl\'s deprecation warning' -r
complete -c infera -n "__fish_infera_using_subcommand drain" -l stall-after -d 'A moved worker\'s surge pod Unschedulable for this long is a stall' -r
complete -c infera -n "__fish_infera_using_subcommand drain" -l step-timeout -d 'Give up on a single step of a move after this long' -r
complete -c infera -n "__fish_infera_using_subcommand drain" -s o -l output -d 'Output format on stdout (`json`: JSON lines, as `rollout -o json`)' -r -f -a "text\t'The plan, progress (bars on a terminal) and the report table'
json\t'One JSON object per line on stdout for every event (plan, note, start, event, step, stall, leg-done, finish), the last one `{"event":"result","exit":N,"report":{…}|null}`'"
complete -c infera -n "__fish_infera_using_subcommand drain" -l traffic-rate -d 'Requests per second (at most 50)' -r
complete -c infera -n "__fish_infera_using_subcommand drain" -l traffic-concurrency -d 'At most this many requests in flight; a tick that finds them all busy sends nothing and is counted' -r
complete -c infera -n "__fish_infera_using_subcommand drain" -l traffic-deadline -d 'Each request\'s deadline: past it, it is `hung`' -r
complete -c infera -n "__fish_infera_using_subcommand drain" -l traffic-service -d 'The Service to send to, through the API server\'s service proxy (default: the InferaDeployment\'s `componentType: server` service)' -r
complete -c infera -n "__fish_infera_using_subcommand drain" -l traffic-url -d 'A base URL to send to directly (an ingress, a port-forward) instead of the API server\'s proxy; no control probe runs beside it' -r
complete -c infera -n "__fish_infera_using_subcommand drain" -l traffic-model -d 'The model to ask for (default: the first of `/v1/models`)' -r
complete -c infera -n "__fish_infera_using_subcommand drain" -l traffic-log -d 'Write one JSON line per request to FILE' -r -F
complete -c infera -n "__fish_infera_using_subcommand drain" -l sample-interval -d 'Seconds between two readiness samples (the field check uses 10 s)' -r
complete -c infera -n "__fish_infera_using_subcommand drain" -l min-ready -d 'A role below this many Ready or routable pods counts as a gap' -r
complete -c infera -n "__fish_infera_using_subcommand drain" -l report -d 'Write the report to FILE: `.html` writes a self-contained incident report page (plan, steps, per-role table, verdict, chart), any other name the JSON report' -r -F
complete -c infera -n "__fish_infera_using_subcommand drain" -l timeline -d 'Write the timeline to FILE: `.svg` draws a chart, `.csv` writes rows. Repeat for both' -r -F
complete -c infera -n "__fish_infera_using_subcommand drain" -l kubeconfig -d 'Path to the kubeconfig file to use' -r -F
complete -c infera -n "__fish_infera_using_subcommand drain" -l context -d 'The name of the kubeconfig context to use' -r
complete -c infera -n "__fish_infera_using_subcommand drain" -s n -l namespace -d 'The namespace scope for this request (default: the context\'s namespace)' -r
complete -c infera -n "__fish_infera_using_subcommand drain" -l ignore-daemonsets -d 'Leave DaemonSet-managed pods (otherwise the drain is refused)'
complete -c infera -n "__fish_infera_using_subcommand drain" -l delete-emptydir-data -d 'Evict pods with emptyDir volumes (their data is lost)'
complete -c infera -n "__fish_infera_using_subcommand drain" -l force -d 'Drain despite a predicted GAP or STALL, and evict pods that declare no controller'
complete -c infera -n "__fish_infera_using_subcommand drain" -l traffic -d 'Send OpenAI-compatible requests (streaming chat completions and completions, alternating) through the serving path while this runs and account for every one: a request that fails makes the verdict a gap (exit 1) even when the pod counts held. The path must answer 5 requests in a row first, or nothing starts (exit 3)'
complete -c infera -n "__fish_infera_using_subcommand drain" -s v -l verbose -d 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
complete -c infera -n "__fish_infera_using_subcommand drain" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c infera -n "__fish_infera_using_subcommand drain" -s V -l version -d 'Print version'
complete -c infera -n "__fish_infera_using_subcommand sim; and not __fish_seen_subcommand_from serve attach scenarios help" -s v -l verbose -d 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
complete -c infera -n "__fish_infera_using_subcommand sim; and not __fish_seen_subcommand_from serve attach scenarios help" -s h -l help -d 'Print help'
complete -c infera -n "__fish_infera_using_subcommand sim; and not __fish_seen_subcommand_from serve attach scenarios help" -s V -l version -d 'Print version'
complete -c infera -n "__fish_infera_using_subcommand sim; and not __fish_seen_subcommand_from serve attach scenarios help" -f -a "serve" -d 'Serve a simulated cluster until interrupted'
complete -c infera -n "__fish_infera_using_subcommand sim; and not __fish_seen_subcommand_from serve attach scenarios help" -f -a "attach" -d 'Attach the simulated world (GPU nodes, kubelet, infera operator) to any Kubernetes API server, until interrupted'
complete -c infera -n "__fish_infera_using_subcommand sim; and not __fish_seen_subcommand_from serve attach scenarios help" -f -a "scenarios" -d 'List the built-in scenarios'
complete -c infera -n "__fish_infera_using_subcommand sim; and not __fish_seen_subcommand_from serve attach scenarios help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c infera -n "__fish_infera_using_subcommand sim; and __fish_seen_subcommand_from serve" -l clock-skew -d 'Run the cluster\'s clock this far off the host\'s (`-300s`, `90s`): every timestamp it writes and every `Date` header, as a control plane with a skewed clock (for testing clients\' skew handling)' -r
complete -c infera -n "__fish_infera_using_subcommand sim; and __fish_seen_subcommand_from serve" -l truth -d 'Write the simulator\'s ground truth (every InferaDeployment service\'s Ready and routable counts, at every change; every request the simulated routers received and how it ended) to FILE when it stops' -r -F
complete -c infera -n "__fish_infera_using_subcommand sim; and __fish_seen_subcommand_from serve" -l scenario -d 'Built-in scenario name or a scenario file' -r
complete -c infera -n "__fish_infera_using_subcommand sim; and __fish_seen_subcommand_from serve" -l port -d 'Port on 127.0.0.1 (0 picks a free one)' -r
complete -c infera -n "__fish_infera_using_subcommand sim; and __fish_seen_subcommand_from serve" -l token -d 'Bearer token clients must present (default: a random one)' -r
complete -c infera -n "__fish_infera_using_subcommand sim; and __fish_seen_subcommand_from serve" -l kubeconfig-out -d 'Write a kubeconfig for the simulator to PATH' -r -F
complete -c infera -n "__fish_infera_using_subcommand sim; and __fish_seen_subcommand_from serve" -l speed -d 'Simulated seconds per wall-clock second' -r
complete -c infera -n "__fish_infera_using_subcommand sim; and __fish_seen_subcommand_from serve" -l seed -d 'Random seed (default: the scenario\'s)' -r
complete -c infera -n "__fish_infera_using_subcommand sim; and __fish_seen_subcommand_from serve" -l operator -d 'The operator generation the simulated operator renders as (default: the scenario\'s `operator`, else latest)' -r -f -a "pre-176\t'Before PR #176: surge-free, /health on the engine port'
176\t'PR #176 and later: surge-first when probed /ready on the readiness port'
latest\t'The newest generation infera knows (176)'"
complete -c infera -n "__fish_infera_using_subcommand sim; and __fish_seen_subcommand_from serve" -l event-ttl -d 'Delete each Event this long after its last write, in simulated time (kube-apiserver\'s `--event-ttl`; watchers see it DELETED). `0` keeps Events' -r
complete -c infera -n "__fish_infera_using_subcommand sim; and __fish_seen_subcommand_from serve" -l drop-watches-every -d 'Drop every watch stream every this long (wall clock)' -r
complete -c infera -n "__fish_infera_using_subcommand sim; and __fish_seen_subcommand_from serve" -l error-rate -d 'Answer this fraction of requests (0..1) with 5xx/429 bursts carrying `Retry-After`' -r
complete -c infera -n "__fish_infera_using_subcommand sim; and __fish_seen_subcommand_from serve" -l conflict-rate -d 'Answer this fraction of updates with 409 Conflict' -r
complete -c infera -n "__fish_infera_using_subcommand sim; and __fish_seen_subcommand_from serve" -l compact-every -d 'Compact the watch history every this long, forcing 410 Gone on resume' -r
complete -c infera -n "__fish_infera_using_subcommand sim; and __fish_seen_subcommand_from serve" -l latency -d 'Add this latency to every request' -r
complete -c infera -n "__fish_infera_using_subcommand sim; and __fish_seen_subcommand_from serve" -l restart-api-every -d 'Restart the API server listener every this long (state is kept)' -r
complete -c infera -n "__fish_infera_using_subcommand sim; and __fish_seen_subcommand_from serve" -l cut -d 'Cut the clients off the API server AT after the start FOR this long: open connections are reset, new ones refused; the cluster goes on (repeatable; e.g. `--cut 30s:55s`)' -r
complete -c infera -n "__fish_infera_using_subcommand sim; and __fish_seen_subcommand_from serve" -l blackhole -d 'Blackhole the clients\' connections AT after the start FOR this long: held open, nothing delivered either way until it ends (repeatable)' -r
complete -c infera -n "__fish_infera_using_subcommand sim; and __fish_seen_subcommand_from serve" -l plain-http -d 'Serve plain HTTP instead of HTTPS with a generated CA. kubectl does not send a bearer token over plain HTTP, so only `kube`-based clients and curl can authenticate then'
complete -c infera -n "__fish_infera_using_subcommand sim; and __fish_seen_subcommand_from serve" -l no-world -d 'Serve an empty cluster (API server, Deployment/ReplicaSet controllers, scheduler, GC): no nodes, no manifests, no kubelet or operator, for `infera sim attach` to bring them'
complete -c infera -n "__fish_infera_using_subcommand sim; and __fish_seen_subcommand_from serve" -s v -l verbose -d 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
complete -c infera -n "__fish_infera_using_subcommand sim; and __fish_seen_subcommand_from serve" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c infera -n "__fish_infera_using_subcommand sim; and __fish_seen_subcommand_from serve" -s V -l version -d 'Print version'
complete -c infera -n "__fish_infera_using_subcommand sim; and __fish_seen_subcommand_from attach" -l kubeconfig -d 'Kubeconfig of the cluster to attach to (default: KUBECONFIG, then ~/.kube/config)' -r -F
complete -c infera -n "__fish_infera_using_subcommand sim; and __fish_seen_subcommand_from attach" -l context -d 'Kubeconfig context (default: the current one)' -r
complete -c infera -n "__fish_infera_using_subcommand sim; and __fish_seen_subcommand_from attach" -l scenario -d 'Built-in scenario name or a scenario file' -r
complete -c infera -n "__fish_infera_using_subcommand sim; and __fish_seen_subcommand_from attach" -l speed -d 'Simulated seconds per wall-clock second, for the world (image pulls, weight loads, probes); the control plane runs in real time' -r
complete -c infera -n "__fish_infera_using_subcommand sim; and __fish_seen_subcommand_from attach" -l pod-cidr -d 'Pod IPs come from this range; listeners bind there, so it must be local to this machine (e.g. `127.77.0.0/16`, or a range routed to `lo` in the lab\'s network namespace)' -r
complete -c infera -n "__fish_infera_using_subcommand sim; and __fish_seen_subcommand_from attach" -l operator -d 'The operator generation the simulated operator renders as (default: the scenario\'s `operator`, else latest)' -r -f -a "pre-176\t'Before PR #176: surge-free, /health on the engine port'
176\t'PR #176 and later: surge-first when probed /ready on the readiness port'
latest\t'The newest generation infera knows (176)'"
complete -c infera -n "__fish_infera_using_subcommand sim; and __fish_seen_subcommand_from attach" -l truth -d 'On exit, write every request the simulated routers received and how it ended to FILE (the ground truth\'s `{"requests": […]}`; the pods\' truth is the API server\'s own)' -r -F
complete -c infera -n "__fish_infera_using_subcommand sim; and __fish_seen_subcommand_from attach" -l no-operator -d 'Do not run the infera operator (a real one runs in the cluster; its pods need the simulated nodes\' toleration, or `--no-taint`)'
complete -c infera -n "__fish_infera_using_subcommand sim; and __fish_seen_subcommand_from attach" -l no-taint -d 'Do not taint the simulated nodes'
complete -c infera -n "__fish_infera_using_subcommand sim; and __fish_seen_subcommand_from attach" -l cleanup -d 'Remove what attach creates for the scenario (nodes, Leases, applied objects), then exit'
complete -c infera -n "__fish_infera_using_subcommand sim; and __fish_seen_subcommand_from attach" -s v -l verbose -d 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
complete -c infera -n "__fish_infera_using_subcommand sim; and __fish_seen_subcommand_from attach" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c infera -n "__fish_infera_using_subcommand sim; and __fish_seen_subcommand_from attach" -s V -l version -d 'Print version'
complete -c infera -n "__fish_infera_using_subcommand sim; and __fish_seen_subcommand_from scenarios" -s v -l verbose -d 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
complete -c infera -n "__fish_infera_using_subcommand sim; and __fish_seen_subcommand_from scenarios" -s h -l help -d 'Print help'
complete -c infera -n "__fish_infera_using_subcommand sim; and __fish_seen_subcommand_from scenarios" -s V -l version -d 'Print version'
complete -c infera -n "__fish_infera_using_subcommand sim; and __fish_seen_subcommand_from help" -f -a "serve" -d 'Serve a simulated cluster until interrupted'
complete -c infera -n "__fish_infera_using_subcommand sim; and __fish_seen_subcommand_from help" -f -a "attach" -d 'Attach the simulated world (GPU nodes, kubelet, infera operator) to any Kubernetes API server, until interrupted'
complete -c infera -n "__fish_infera_using_subcommand sim; and __fish_seen_subcommand_from help" -f -a "scenarios" -d 'List the built-in scenarios'
complete -c infera -n "__fish_infera_using_subcommand sim; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c infera -n "__fish_infera_using_subcommand demo" -l scenario -d 'Built-in scenario name (see `infera sim scenarios`) or a scenario file' -r
complete -c infera -n "__fish_infera_using_subcommand demo" -l speed -d 'Simulated seconds per wall-clock second' -r
complete -c infera -n "__fish_infera_using_subcommand demo" -l stall-after -d 'A surge pod Unschedulable for this long (simulated time) is a stall' -r
complete -c infera -n "__fish_infera_using_subcommand demo" -l sample-interval -d 'Seconds between two readiness samples (the field check uses 10 s)' -r
complete -c infera -n "__fish_infera_using_subcommand demo" -l min-ready -d 'A role below this many Ready or routable pods counts as a gap' -r
complete -c infera -n "__fish_infera_using_subcommand demo" -l report -d 'Write the report to FILE: `.html` writes a self-contained incident report page (plan, steps, per-role table, verdict, chart), any other name the JSON report' -r -F
complete -c infera -n "__fish_infera_using_subcommand demo" -l timeline -d 'Write the timeline to FILE: `.svg` draws a chart, `.csv` writes rows. Repeat for both' -r -F
complete -c infera -n "__fish_infera_using_subcommand demo" -l no-traffic -d 'Send no requests through the serving path (by default the demo sends them and prints their tally, as `--traffic` does)'
complete -c infera -n "__fish_infera_using_subcommand demo" -s v -l verbose -d 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
complete -c infera -n "__fish_infera_using_subcommand demo" -s h -l help -d 'Print help'
complete -c infera -n "__fish_infera_using_subcommand demo" -s V -l version -d 'Print version'
complete -c infera -n "__fish_infera_using_subcommand monitor" -s l -l selector -d 'Only the InferaDeployments, Deployments and StatefulSets whose labels match this selector (`team=a`, `tier in (a,b)`, `!canary`)' -r
complete -c infera -n "__fish_infera_using_subcommand monitor" -l min-ready -d 'A role with fewer Ready or routable pods than this is below the floor (the below-floor counters and alert)' -r
complete -c infera -n "__fish_infera_using_subcommand monitor" -l listen -d 'Serve `/metrics`, `/healthz` and `/readyz` on this address (`0.0.0.0:8491` in a pod; port 0 picks a free one)' -r
complete -c infera -n "__fish_infera_using_subcommand monitor" -l format -d 'With `--print-rules`: a PrometheusRule, or a plain rules file' -r -f -a "prometheus-rule\t'A prometheus-operator `PrometheusRule` object'
plain\t'A plain Prometheus rules file (`rule_files:`)'"
complete -c infera -n "__fish_infera_using_subcommand monitor" -l image -d 'Image of the monitor\'s Deployment (`--print-manifests`)' -r
complete -c infera -n "__fish_infera_using_subcommand monitor" -l no-routable-for -d 'Alert: a role with no routable pod this long (critical)' -r
complete -c infera -n "__fish_infera_using_subcommand monitor" -l below-min-for -d 'Alert: a rolling role below `--min-ready` this long' -r
complete -c infera -n "__fish_infera_using_subcommand monitor" -l stalled-for -d 'Alert: a pod of a rolling role unschedulable this long (a stalled surge; `infera rollout --stall-after` is 5m too)' -r
complete -c infera -n "__fish_infera_using_subcommand monitor" -l ready-not-routable-for -d 'Alert: Ready pods not routable this long (readiness that means nothing)' -r
complete -c infera -n "__fish_infera_using_subcommand monitor" -l watch-down-for -d 'Alert: a watch of the monitor not current this long' -r
complete -c infera -n "__fish_infera_using_subcommand monitor" -l request-failure-ratio -d 'Alert: the failure ratio of attributed probe requests over 5m above this (a fraction: 0.01 is 1 %)' -r
complete -c infera -n "__fish_infera_using_subcommand monitor" -l request-failures-for -d 'Alert: that ratio above its threshold this long' -r
complete -c infera -n "__fish_infera_using_subcommand monitor" -l probe-interval -d 'Send one small OpenAI request through the router of each InferaDeployment in scope this often (at least 1s), beside a control request to the API server\'s /readyz' -r
complete -c infera -n "__fish_infera_using_subcommand monitor" -l kubeconfig -d 'Path to the kubeconfig file to use' -r -F
complete -c infera -n "__fish_infera_using_subcommand monitor" -l context -d 'The name of the kubeconfig context to use' -r
complete -c infera -n "__fish_infera_using_subcommand monitor" -s n -l namespace -d 'The namespace scope for this request (default: the context\'s namespace)' -r
complete -c infera -n "__fish_infera_using_subcommand monitor" -s A -l all-namespaces -d 'Watch every namespace (one cluster-wide list+watch per resource) instead of the `-n` namespace'
complete -c infera -n "__fish_infera_using_subcommand monitor" -l print-rules -d 'Print the alert rules and exit'
complete -c infera -n "__fish_infera_using_subcommand monitor" -l print-manifests -d 'Print the ServiceAccount, RBAC, Deployment, Service and ServiceMonitor that run the monitor in the `-n` namespace, and exit'
complete -c infera -n "__fish_infera_using_subcommand monitor" -l no-probe -d 'Send no requests (no infera_requests_total, no TTFT)'
complete -c infera -n "__fish_infera_using_subcommand monitor" -s v -l verbose -d 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
complete -c infera -n "__fish_infera_using_subcommand monitor" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c infera -n "__fish_infera_using_subcommand monitor" -s V -l version -d 'Print version'
complete -c infera -n "__fish_infera_using_subcommand rbac" -s n -l namespace -d 'Namespace of the Role (and of the ServiceAccount the bindings name) (default: the context\'s namespace)' -r
complete -c infera -n "__fish_infera_using_subcommand rbac" -s o -l output -d 'Output format' -r -f -a "yaml\t''
json\t''"
complete -c infera -n "__fish_infera_using_subcommand rbac" -s A -l all-namespaces -d 'Grant the Role\'s rules in every namespace (a ClusterRole and ClusterRoleBinding instead), for `audit -A` and `lint --cluster -A`'
complete -c infera -n "__fish_infera_using_subcommand rbac" -l drain -d 'Print what `infera drain` needs: the same rules in every namespace (it moves and evicts wherever a pod runs) and the `infera-drain` ClusterRole (nodes, evictions, PodDisruptionBudgets, owners)'
complete -c infera -n "__fish_infera_using_subcommand rbac" -l traffic -d 'Also grant what `--traffic` sends through the API server\'s service proxy to the router (`get` and `create` on `services/proxy`)'
complete -c infera -n "__fish_infera_using_subcommand rbac" -s v -l verbose -d 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
complete -c infera -n "__fish_infera_using_subcommand rbac" -s h -l help -d 'Print help'
complete -c infera -n "__fish_infera_using_subcommand rbac" -s V -l version -d 'Print version'
complete -c infera -n "__fish_infera_using_subcommand policy" -s o -l output -d 'Output format' -r -f -a "yaml\t''
json\t''"
complete -c infera -n "__fish_infera_using_subcommand policy" -l operator -d 'The operator generation whose rendering the InferaDeployment checks follow (default: the `operator` key of `.infera-lint.yaml` found upward from the cwd, else latest)' -r -f -a "pre-176\t'Before PR #176: surge-free, /health on the engine port'
176\t'PR #176 and later: surge-first when probed /ready on the readiness port'
latest\t'The newest generation infera knows (176)'"
complete -c infera -n "__fish_infera_using_subcommand policy" -l fail-on -d 'Deny findings at or above this severity (below it: warn); `never` denies nothing' -r -f -a "warning\t''
error\t''
never\t''"
complete -c infera -n "__fish_infera_using_subcommand policy" -l action -d 'What the bindings do: by severity (`--fail-on`), or warn only' -r -f -a "severity\t'Deny findings at or above `--fail-on`, warn below; audit both'
warn\t'Warn and audit only, whatever the severity (a dry run in production)'"
complete -c infera -n "__fish_infera_using_subcommand policy" -s v -l verbose -d 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
complete -c infera -n "__fish_infera_using_subcommand policy" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c infera -n "__fish_infera_using_subcommand policy" -s V -l version -d 'Print version'
complete -c infera -n "__fish_infera_using_subcommand completions" -s v -l verbose -d 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
complete -c infera -n "__fish_infera_using_subcommand completions" -s h -l help -d 'Print help'
complete -c infera -n "__fish_infera_using_subcommand completions" -s V -l version -d 'Print version'
complete -c infera -n "__fish_infera_using_subcommand generate" -l dir -d 'Directory holding `completions/`, `man/` and `docs/lint.md`' -r -F
complete -c infera -n "__fish_infera_using_subcommand generate" -s v -l verbose -d 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged'
complete -c infera -n "__fish_infera_using_subcommand generate" -s h -l help -d 'Print help'
complete -c infera -n "__fish_infera_using_subcommand generate" -s V -l version -d 'Print version'
complete -c infera -n "__fish_infera_using_subcommand help; and not __fish_seen_subcommand_from lint rules render rollout audit drain sim demo monitor rbac policy completions generate help" -f -a "lint" -d 'Audit manifests for configurations where a surge rollout would stall, gap or silently retire a serving pod'
complete -c infera -n "__fish_infera_using_subcommand help; and not __fish_seen_subcommand_from lint rules render rollout audit drain sim demo monitor rbac policy completions generate help" -f -a "rules" -d 'List the lint rules, or print one rule\'s documentation'
complete -c infera -n "__fish_infera_using_subcommand help; and not __fish_seen_subcommand_from lint rules render rollout audit drain sim demo monitor rbac policy completions generate help" -f -a "render" -d 'Print the Deployments/LeaderWorkerSets the infera operator would create from an InferaDeployment, annotated with the predicted rollout strategy'
complete -c infera -n "__fish_infera_using_subcommand help; and not __fish_seen_subcommand_from lint rules render rollout audit drain sim demo monitor rbac policy completions generate help" -f -a "rollout" -d 'Drive a worker rollout step by step: surge, wait for /ready, retire the old pod, one leg at a time'
complete -c infera -n "__fish_infera_using_subcommand help; and not __fish_seen_subcommand_from lint rules render rollout audit drain sim demo monitor rbac policy completions generate help" -f -a "audit" -d 'Sample readiness and routability per role while someone else rolls, and report the minimum number of Ready and routable pods'
complete -c infera -n "__fish_infera_using_subcommand help; and not __fish_seen_subcommand_from lint rules render rollout audit drain sim demo monitor rbac policy completions generate help" -f -a "drain" -d 'Drain node(s) as a rollout: plan every pod on them, move the serving workers surge-first, evict the rest honouring PodDisruptionBudgets'
complete -c infera -n "__fish_infera_using_subcommand help; and not __fish_seen_subcommand_from lint rules render rollout audit drain sim demo monitor rbac policy completions generate help" -f -a "sim" -d 'A local simulated cluster that speaks the real Kubernetes API'
complete -c infera -n "__fish_infera_using_subcommand help; and not __fish_seen_subcommand_from lint rules render rollout audit drain sim demo monitor rbac policy completions generate help" -f -a "demo" -d 'Roll a worker on the built-in simulated cluster and show the evidence'
complete -c infera -n "__fish_infera_using_subcommand help; and not __fish_seen_subcommand_from lint rules render rollout audit drain sim demo monitor rbac policy completions generate help" -f -a "monitor" -d 'Audit continuously as a service: Prometheus metrics per role on `/metrics`, alert rules (`--print-rules`), in-cluster manifests (`--print-manifests`)'
complete -c infera -n "__fish_infera_using_subcommand help; and not __fish_seen_subcommand_from lint rules render rollout audit drain sim demo monitor rbac policy completions generate help" -f -a "rbac" -d 'Print the minimal RBAC Role that `infera rollout` and `infera audit` need'
complete -c infera -n "__fish_infera_using_subcommand help; and not __fish_seen_subcommand_from lint rules render rollout audit drain sim demo monitor rbac policy completions generate help" -f -a "policy" -d 'Print lint\'s rules as ValidatingAdmissionPolicies and their bindings (`kubectl infera policy | kubectl apply -f -`)'
complete -c infera -n "__fish_infera_using_subcommand help; and not __fish_seen_subcommand_from lint rules render rollout audit drain sim demo monitor rbac policy completions generate help" -f -a "completions" -d 'Print a shell completion script to stdout'
complete -c infera -n "__fish_infera_using_subcommand help; and not __fish_seen_subcommand_from lint rules render rollout audit drain sim demo monitor rbac policy completions generate help" -f -a "generate" -d 'Regenerate `completions/` and `man/` from these flag definitions, and the rules table of `docs/lint.md` from the rule registry'
complete -c infera -n "__fish_infera_using_subcommand help; and not __fish_seen_subcommand_from lint rules render rollout audit drain sim demo monitor rbac policy completions generate help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c infera -n "__fish_infera_using_subcommand help; and __fish_seen_subcommand_from rollout" -f -a "restart" -d 'Restart the worker pods of TARGET, one service at a time'
complete -c infera -n "__fish_infera_using_subcommand help; and __fish_seen_subcommand_from rollout" -f -a "set-image" -d 'Change the image of `--service` in TARGET and roll it'
complete -c infera -n "__fish_infera_using_subcommand help; and __fish_seen_subcommand_from rollout" -f -a "history" -d 'Print the last rollouts infera drove on TARGET, newest first'
complete -c infera -n "__fish_infera_using_subcommand help; and __fish_seen_subcommand_from sim" -f -a "serve" -d 'Serve a simulated cluster until interrupted'
complete -c infera -n "__fish_infera_using_subcommand help; and __fish_seen_subcommand_from sim" -f -a "attach" -d 'Attach the simulated world (GPU nodes, kubelet, infera operator) to any Kubernetes API server, until interrupted'
complete -c infera -n "__fish_infera_using_subcommand help; and __fish_seen_subcommand_from sim" -f -a "scenarios" -d 'List the built-in scenarios'
