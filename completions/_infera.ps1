
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'infera' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'infera'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'infera' {
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('lint', 'lint', [CompletionResultType]::ParameterValue, 'Audit manifests for configurations where a surge rollout would stall, gap or silently retire a serving pod')
            [CompletionResult]::new('rules', 'rules', [CompletionResultType]::ParameterValue, 'List the lint rules, or print one rule''s documentation')
            [CompletionResult]::new('render', 'render', [CompletionResultType]::ParameterValue, 'Print the Deployments/LeaderWorkerSets the infera operator would create from an InferaDeployment, annotated with the predicted rollout strategy')
            [CompletionResult]::new('rollout', 'rollout', [CompletionResultType]::ParameterValue, 'Drive a worker rollout step by step: surge, wait for /ready, retire the old pod, one leg at a time')
            [CompletionResult]::new('audit', 'audit', [CompletionResultType]::ParameterValue, 'Sample readiness and routability per role while someone else rolls, and report the minimum number of Ready and routable pods')
            [CompletionResult]::new('drain', 'drain', [CompletionResultType]::ParameterValue, 'Drain node(s) as a rollout: plan every pod on them, move the serving workers surge-first, evict the rest honouring PodDisruptionBudgets')
            [CompletionResult]::new('sim', 'sim', [CompletionResultType]::ParameterValue, 'A local simulated cluster that speaks the real Kubernetes API')
            [CompletionResult]::new('demo', 'demo', [CompletionResultType]::ParameterValue, 'Roll a worker on the built-in simulated cluster and show the evidence')
            [CompletionResult]::new('monitor', 'monitor', [CompletionResultType]::ParameterValue, 'Audit continuously as a service: Prometheus metrics per role on `/metrics`, alert rules (`--print-rules`), in-cluster manifests (`--print-manifests`)')
            [CompletionResult]::new('rbac', 'rbac', [CompletionResultType]::ParameterValue, 'Print the minimal RBAC Role that `infera rollout` and `infera audit` need')
            [CompletionResult]::new('policy', 'policy', [CompletionResultType]::ParameterValue, 'Print lint''s rules as ValidatingAdmissionPolicies and their bindings (`kubectl infera policy | kubectl apply -f -`)')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print a shell completion script to stdout')
            [CompletionResult]::new('generate', 'generate', [CompletionResultType]::ParameterValue, 'Regenerate `completions/` and `man/` from these flag definitions, and the rules table of `docs/lint.md` from the rule registry')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'infera;lint' {
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--node-gpus', '--node-gpus', [CompletionResultType]::ParameterName, 'GPUs per node assumed by the capacity rules when no `--nodes` is given')
            [CompletionResult]::new('--nodes', '--nodes', [CompletionResultType]::ParameterName, 'Node inventory: the output of `kubectl get nodes -o yaml`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: `.infera-lint.yaml` found upward from the cwd)')
            [CompletionResult]::new('--select', '--select', [CompletionResultType]::ParameterName, 'Only run these rules (codes or names, comma-separated or repeated)')
            [CompletionResult]::new('--ignore', '--ignore', [CompletionResultType]::ParameterName, 'Do not run these rules (codes or names, comma-separated or repeated)')
            [CompletionResult]::new('--fail-on', '--fail-on', [CompletionResultType]::ParameterName, 'Exit 1 when a finding at or above this severity is reported')
            [CompletionResult]::new('-j', '-j', [CompletionResultType]::ParameterName, 'Lint this many files at once. 0 (the default) picks one thread per CPU, or `RAYON_NUM_THREADS` when it is set')
            [CompletionResult]::new('--threads', '--threads', [CompletionResultType]::ParameterName, 'Lint this many files at once. 0 (the default) picks one thread per CPU, or `RAYON_NUM_THREADS` when it is set')
            [CompletionResult]::new('--operator', '--operator', [CompletionResultType]::ParameterName, 'The operator generation to predict (default: the config''s `operator`, else latest). With `--cluster` it is read off the live workers and this only applies where they do not tell')
            [CompletionResult]::new('--values', '--values', [CompletionResultType]::ParameterName, 'Helm charts: a values file passed to `helm template --values` (repeatable, in order)')
            [CompletionResult]::new('--set', '--set', [CompletionResultType]::ParameterName, 'Helm charts: a value passed to `helm template --set` (repeatable, in order)')
            [CompletionResult]::new('--helm', '--helm', [CompletionResultType]::ParameterName, 'The helm that renders directories holding `Chart.yaml` (default: `helm` on `PATH`; without one, charts are skipped and named)')
            [CompletionResult]::new('--kubectl', '--kubectl', [CompletionResultType]::ParameterName, 'The kubectl whose `kubectl kustomize` renders directories holding `kustomization.yaml` (default: `kubectl` on `PATH`)')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file to use')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The name of the kubeconfig context to use')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace scope for this request (default: the context''s namespace)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace scope for this request (default: the context''s namespace)')
            [CompletionResult]::new('--cluster', '--cluster', [CompletionResultType]::ParameterName, 'Lint the live objects of a cluster instead of files')
            [CompletionResult]::new('-A', '-A ', [CompletionResultType]::ParameterName, 'With `--cluster`: every namespace')
            [CompletionResult]::new('--all-namespaces', '--all-namespaces', [CompletionResultType]::ParameterName, 'With `--cluster`: every namespace')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'infera;rules' {
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print as JSON instead of text')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'infera;render' {
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--operator', '--operator', [CompletionResultType]::ParameterName, 'The operator generation to render as (default: the `operator` key of `.infera-lint.yaml` found upward from the cwd, else latest)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'infera;rollout' {
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('restart', 'restart', [CompletionResultType]::ParameterValue, 'Restart the worker pods of TARGET, one service at a time')
            [CompletionResult]::new('set-image', 'set-image', [CompletionResultType]::ParameterValue, 'Change the image of `--service` in TARGET and roll it')
            [CompletionResult]::new('history', 'history', [CompletionResultType]::ParameterValue, 'Print the last rollouts infera drove on TARGET, newest first')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'infera;rollout;restart' {
            [CompletionResult]::new('--service', '--service', [CompletionResultType]::ParameterName, 'Service of the InferaDeployment to roll (repeatable; default: every worker service)')
            [CompletionResult]::new('--set-env', '--set-env', [CompletionResultType]::ParameterName, 'Also set this environment variable on the main container (repeatable)')
            [CompletionResult]::new('--order', '--order', [CompletionResultType]::ParameterName, 'Order of the legs (services), comma-separated')
            [CompletionResult]::new('--pause-between', '--pause-between', [CompletionResultType]::ParameterName, 'Where to stop and ask before going on')
            [CompletionResult]::new('--step-timeout', '--step-timeout', [CompletionResultType]::ParameterName, 'Give up on a single step after this long')
            [CompletionResult]::new('--stall-after', '--stall-after', [CompletionResultType]::ParameterName, 'A surge pod Unschedulable for this long is a stall')
            [CompletionResult]::new('--on-stall', '--on-stall', [CompletionResultType]::ParameterName, 'What to do on a stall')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format on stdout (`json`: JSON lines, for a log collector or another program; stderr keeps the file notes)')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format on stdout (`json`: JSON lines, for a log collector or another program; stderr keeps the file notes)')
            [CompletionResult]::new('--sample-interval', '--sample-interval', [CompletionResultType]::ParameterName, 'Seconds between two readiness samples (the field check uses 10 s)')
            [CompletionResult]::new('--min-ready', '--min-ready', [CompletionResultType]::ParameterName, 'A role below this many Ready or routable pods counts as a gap')
            [CompletionResult]::new('--report', '--report', [CompletionResultType]::ParameterName, 'Write the report to FILE: `.html` writes a self-contained incident report page (plan, steps, per-role table, verdict, chart), any other name the JSON report')
            [CompletionResult]::new('--timeline', '--timeline', [CompletionResultType]::ParameterName, 'Write the timeline to FILE: `.svg` draws a chart, `.csv` writes rows. Repeat for both')
            [CompletionResult]::new('--traffic-rate', '--traffic-rate', [CompletionResultType]::ParameterName, 'Requests per second (at most 50)')
            [CompletionResult]::new('--traffic-concurrency', '--traffic-concurrency', [CompletionResultType]::ParameterName, 'At most this many requests in flight; a tick that finds them all busy sends nothing and is counted')
            [CompletionResult]::new('--traffic-deadline', '--traffic-deadline', [CompletionResultType]::ParameterName, 'Each request''s deadline: past it, it is `hung`')
            [CompletionResult]::new('--traffic-service', '--traffic-service', [CompletionResultType]::ParameterName, 'The Service to send to, through the API server''s service proxy (default: the InferaDeployment''s `componentType: server` service)')
            [CompletionResult]::new('--traffic-url', '--traffic-url', [CompletionResultType]::ParameterName, 'A base URL to send to directly (an ingress, a port-forward) instead of the API server''s proxy; no control probe runs beside it')
            [CompletionResult]::new('--traffic-model', '--traffic-model', [CompletionResultType]::ParameterName, 'The model to ask for (default: the first of `/v1/models`)')
            [CompletionResult]::new('--traffic-log', '--traffic-log', [CompletionResultType]::ParameterName, 'Write one JSON line per request to FILE')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file to use')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The name of the kubeconfig context to use')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace scope for this request (default: the context''s namespace)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace scope for this request (default: the context''s namespace)')
            [CompletionResult]::new('--surge', '--surge', [CompletionResultType]::ParameterName, 'Plain Deployment only: set maxSurge 1 / maxUnavailable 0 first')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Print the plan and stop, changing nothing; exit 3 when the roll would be refused (a predicted GAP or STALL without --force), else 0')
            [CompletionResult]::new('--force', '--force', [CompletionResultType]::ParameterName, 'Proceed even when the preflight predicts a stall or a gap')
            [CompletionResult]::new('-y', '-y', [CompletionResultType]::ParameterName, 'Do not ask for confirmation')
            [CompletionResult]::new('--yes', '--yes', [CompletionResultType]::ParameterName, 'Do not ask for confirmation')
            [CompletionResult]::new('--abort', '--abort', [CompletionResultType]::ParameterName, 'Undo the current leg of an interrupted rollout (restore the previous template on the target, so the old pods keep serving) and forget it')
            [CompletionResult]::new('--traffic', '--traffic', [CompletionResultType]::ParameterName, 'Send OpenAI-compatible requests (streaming chat completions and completions, alternating) through the serving path while this runs and account for every one: a request that fails makes the verdict a gap (exit 1) even when the pod counts held. The path must answer 5 requests in a row first, or nothing starts (exit 3)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'infera;rollout;set-image' {
            [CompletionResult]::new('--service', '--service', [CompletionResultType]::ParameterName, 'Service of the InferaDeployment to roll (repeatable; default: every worker service)')
            [CompletionResult]::new('--set-env', '--set-env', [CompletionResultType]::ParameterName, 'Also set this environment variable on the main container (repeatable)')
            [CompletionResult]::new('--order', '--order', [CompletionResultType]::ParameterName, 'Order of the legs (services), comma-separated')
            [CompletionResult]::new('--pause-between', '--pause-between', [CompletionResultType]::ParameterName, 'Where to stop and ask before going on')
            [CompletionResult]::new('--step-timeout', '--step-timeout', [CompletionResultType]::ParameterName, 'Give up on a single step after this long')
            [CompletionResult]::new('--stall-after', '--stall-after', [CompletionResultType]::ParameterName, 'A surge pod Unschedulable for this long is a stall')
            [CompletionResult]::new('--on-stall', '--on-stall', [CompletionResultType]::ParameterName, 'What to do on a stall')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format on stdout (`json`: JSON lines, for a log collector or another program; stderr keeps the file notes)')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format on stdout (`json`: JSON lines, for a log collector or another program; stderr keeps the file notes)')
            [CompletionResult]::new('--sample-interval', '--sample-interval', [CompletionResultType]::ParameterName, 'Seconds between two readiness samples (the field check uses 10 s)')
            [CompletionResult]::new('--min-ready', '--min-ready', [CompletionResultType]::ParameterName, 'A role below this many Ready or routable pods counts as a gap')
            [CompletionResult]::new('--report', '--report', [CompletionResultType]::ParameterName, 'Write the report to FILE: `.html` writes a self-contained incident report page (plan, steps, per-role table, verdict, chart), any other name the JSON report')
            [CompletionResult]::new('--timeline', '--timeline', [CompletionResultType]::ParameterName, 'Write the timeline to FILE: `.svg` draws a chart, `.csv` writes rows. Repeat for both')
            [CompletionResult]::new('--traffic-rate', '--traffic-rate', [CompletionResultType]::ParameterName, 'Requests per second (at most 50)')
            [CompletionResult]::new('--traffic-concurrency', '--traffic-concurrency', [CompletionResultType]::ParameterName, 'At most this many requests in flight; a tick that finds them all busy sends nothing and is counted')
            [CompletionResult]::new('--traffic-deadline', '--traffic-deadline', [CompletionResultType]::ParameterName, 'Each request''s deadline: past it, it is `hung`')
            [CompletionResult]::new('--traffic-service', '--traffic-service', [CompletionResultType]::ParameterName, 'The Service to send to, through the API server''s service proxy (default: the InferaDeployment''s `componentType: server` service)')
            [CompletionResult]::new('--traffic-url', '--traffic-url', [CompletionResultType]::ParameterName, 'A base URL to send to directly (an ingress, a port-forward) instead of the API server''s proxy; no control probe runs beside it')
            [CompletionResult]::new('--traffic-model', '--traffic-model', [CompletionResultType]::ParameterName, 'The model to ask for (default: the first of `/v1/models`)')
            [CompletionResult]::new('--traffic-log', '--traffic-log', [CompletionResultType]::ParameterName, 'Write one JSON line per request to FILE')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file to use')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The name of the kubeconfig context to use')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace scope for this request (default: the context''s namespace)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace scope for this request (default: the context''s namespace)')
            [CompletionResult]::new('--surge', '--surge', [CompletionResultType]::ParameterName, 'Plain Deployment only: set maxSurge 1 / maxUnavailable 0 first')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Print the plan and stop, changing nothing; exit 3 when the roll would be refused (a predicted GAP or STALL without --force), else 0')
            [CompletionResult]::new('--force', '--force', [CompletionResultType]::ParameterName, 'Proceed even when the preflight predicts a stall or a gap')
            [CompletionResult]::new('-y', '-y', [CompletionResultType]::ParameterName, 'Do not ask for confirmation')
            [CompletionResult]::new('--yes', '--yes', [CompletionResultType]::ParameterName, 'Do not ask for confirmation')
            [CompletionResult]::new('--abort', '--abort', [CompletionResultType]::ParameterName, 'Undo the current leg of an interrupted rollout (restore the previous template on the target, so the old pods keep serving) and forget it')
            [CompletionResult]::new('--traffic', '--traffic', [CompletionResultType]::ParameterName, 'Send OpenAI-compatible requests (streaming chat completions and completions, alternating) through the serving path while this runs and account for every one: a request that fails makes the verdict a gap (exit 1) even when the pod counts held. The path must answer 5 requests in a row first, or nothing starts (exit 3)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'infera;rollout;history' {
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'o')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'output')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file to use')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The name of the kubeconfig context to use')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace scope for this request (default: the context''s namespace)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace scope for this request (default: the context''s namespace)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'infera;rollout;help' {
            [CompletionResult]::new('restart', 'restart', [CompletionResultType]::ParameterValue, 'Restart the worker pods of TARGET, one service at a time')
            [CompletionResult]::new('set-image', 'set-image', [CompletionResultType]::ParameterValue, 'Change the image of `--service` in TARGET and roll it')
            [CompletionResult]::new('history', 'history', [CompletionResultType]::ParameterValue, 'Print the last rollouts infera drove on TARGET, newest first')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'infera;rollout;help;restart' {
            break
        }
        'infera;rollout;help;set-image' {
            break
        }
        'infera;rollout;help;history' {
            break
        }
        'infera;rollout;help;help' {
            break
        }
        'infera;audit' {
            [CompletionResult]::new('-l', '-l', [CompletionResultType]::ParameterName, 'Audit every InferaDeployment and Deployment matching this label selector (`model=kimi`, `tier in (a,b)`) instead of naming TARGETs; Deployments the infera operator rendered are audited through their InferaDeployment')
            [CompletionResult]::new('--selector', '--selector', [CompletionResultType]::ParameterName, 'Audit every InferaDeployment and Deployment matching this label selector (`model=kimi`, `tier in (a,b)`) instead of naming TARGETs; Deployments the infera operator rendered are audited through their InferaDeployment')
            [CompletionResult]::new('--for', '--for', [CompletionResultType]::ParameterName, 'Audit for this long. Alone: the window is audited to its end (exit 0 or 1). With `--until-complete`: the longest to wait for completion; reaching it first is a timeout (exit 3)')
            [CompletionResult]::new('--role', '--role', [CompletionResultType]::ParameterName, 'For one plain Deployment: a role and the label selector of its pods (repeatable), e.g. `--role decode=app=dec`')
            [CompletionResult]::new('--samples', '--samples', [CompletionResultType]::ParameterName, 'Stream every sample to FILE as CSV (one target; for several, `--timeline FILE.csv` has every target''s rows)')
            [CompletionResult]::new('--sample-interval', '--sample-interval', [CompletionResultType]::ParameterName, 'Seconds between two readiness samples (the field check uses 10 s)')
            [CompletionResult]::new('--min-ready', '--min-ready', [CompletionResultType]::ParameterName, 'A role below this many Ready or routable pods counts as a gap')
            [CompletionResult]::new('--report', '--report', [CompletionResultType]::ParameterName, 'Write the report to FILE: `.html` writes a self-contained incident report page (plan, steps, per-role table, verdict, chart), any other name the JSON report')
            [CompletionResult]::new('--timeline', '--timeline', [CompletionResultType]::ParameterName, 'Write the timeline to FILE: `.svg` draws a chart, `.csv` writes rows. Repeat for both')
            [CompletionResult]::new('--traffic-rate', '--traffic-rate', [CompletionResultType]::ParameterName, 'Requests per second (at most 50)')
            [CompletionResult]::new('--traffic-concurrency', '--traffic-concurrency', [CompletionResultType]::ParameterName, 'At most this many requests in flight; a tick that finds them all busy sends nothing and is counted')
            [CompletionResult]::new('--traffic-deadline', '--traffic-deadline', [CompletionResultType]::ParameterName, 'Each request''s deadline: past it, it is `hung`')
            [CompletionResult]::new('--traffic-service', '--traffic-service', [CompletionResultType]::ParameterName, 'The Service to send to, through the API server''s service proxy (default: the InferaDeployment''s `componentType: server` service)')
            [CompletionResult]::new('--traffic-url', '--traffic-url', [CompletionResultType]::ParameterName, 'A base URL to send to directly (an ingress, a port-forward) instead of the API server''s proxy; no control probe runs beside it')
            [CompletionResult]::new('--traffic-model', '--traffic-model', [CompletionResultType]::ParameterName, 'The model to ask for (default: the first of `/v1/models`)')
            [CompletionResult]::new('--traffic-log', '--traffic-log', [CompletionResultType]::ParameterName, 'Write one JSON line per request to FILE')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file to use')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The name of the kubeconfig context to use')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace scope for this request (default: the context''s namespace)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace scope for this request (default: the context''s namespace)')
            [CompletionResult]::new('-A', '-A ', [CompletionResultType]::ParameterName, 'Select in every namespace (one cluster-wide pod watch) instead of the `-n` namespace. Without `-l`: every InferaDeployment and Deployment')
            [CompletionResult]::new('--all-namespaces', '--all-namespaces', [CompletionResultType]::ParameterName, 'Select in every namespace (one cluster-wide pod watch) instead of the `-n` namespace. Without `-l`: every InferaDeployment and Deployment')
            [CompletionResult]::new('--until-complete', '--until-complete', [CompletionResultType]::ParameterName, 'Audit until every Deployment of every TARGET is complete as `kubectl rollout status` decides it (observedGeneration caught up, all replicas updated and available, no old replicas) and has stayed so for 20 s, longer than the operator''s reconcile period. A Deployment past its progress deadline ends the audit as stalled (exit 3)')
            [CompletionResult]::new('--traffic', '--traffic', [CompletionResultType]::ParameterName, 'Send OpenAI-compatible requests (streaming chat completions and completions, alternating) through the serving path while this runs and account for every one: a request that fails makes the verdict a gap (exit 1) even when the pod counts held. The path must answer 5 requests in a row first, or nothing starts (exit 3)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'infera;drain' {
            [CompletionResult]::new('-l', '-l', [CompletionResultType]::ParameterName, 'Drain the nodes matching this label selector instead')
            [CompletionResult]::new('--selector', '--selector', [CompletionResultType]::ParameterName, 'Drain the nodes matching this label selector instead')
            [CompletionResult]::new('--pod-selector', '--pod-selector', [CompletionResultType]::ParameterName, 'Only evict pods matching this label selector (`key=value[,…]`)')
            [CompletionResult]::new('--grace-period', '--grace-period', [CompletionResultType]::ParameterName, 'Seconds each evicted pod gets to terminate (negative: its own terminationGracePeriodSeconds)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Give up after this long, one deadline from the cordon over the moves, the evictions and the wait (0: wait for ever); the node stays cordoned')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'kubectl''s: `none` (drain), `client` (print the plan, send nothing that changes anything) or `server` (send the cordon and the evictions with dryRun=All: the API server checks them and persists nothing). Bare `--dry-run` is `client`, with kubectl''s deprecation warning')
            [CompletionResult]::new('--stall-after', '--stall-after', [CompletionResultType]::ParameterName, 'A moved worker''s surge pod Unschedulable for this long is a stall')
            [CompletionResult]::new('--step-timeout', '--step-timeout', [CompletionResultType]::ParameterName, 'Give up on a single step of a move after this long')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format on stdout (`json`: JSON lines, as `rollout -o json`)')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format on stdout (`json`: JSON lines, as `rollout -o json`)')
            [CompletionResult]::new('--traffic-rate', '--traffic-rate', [CompletionResultType]::ParameterName, 'Requests per second (at most 50)')
            [CompletionResult]::new('--traffic-concurrency', '--traffic-concurrency', [CompletionResultType]::ParameterName, 'At most this many requests in flight; a tick that finds them all busy sends nothing and is counted')
            [CompletionResult]::new('--traffic-deadline', '--traffic-deadline', [CompletionResultType]::ParameterName, 'Each request''s deadline: past it, it is `hung`')
            [CompletionResult]::new('--traffic-service', '--traffic-service', [CompletionResultType]::ParameterName, 'The Service to send to, through the API server''s service proxy (default: the InferaDeployment''s `componentType: server` service)')
            [CompletionResult]::new('--traffic-url', '--traffic-url', [CompletionResultType]::ParameterName, 'A base URL to send to directly (an ingress, a port-forward) instead of the API server''s proxy; no control probe runs beside it')
            [CompletionResult]::new('--traffic-model', '--traffic-model', [CompletionResultType]::ParameterName, 'The model to ask for (default: the first of `/v1/models`)')
            [CompletionResult]::new('--traffic-log', '--traffic-log', [CompletionResultType]::ParameterName, 'Write one JSON line per request to FILE')
            [CompletionResult]::new('--sample-interval', '--sample-interval', [CompletionResultType]::ParameterName, 'Seconds between two readiness samples (the field check uses 10 s)')
            [CompletionResult]::new('--min-ready', '--min-ready', [CompletionResultType]::ParameterName, 'A role below this many Ready or routable pods counts as a gap')
            [CompletionResult]::new('--report', '--report', [CompletionResultType]::ParameterName, 'Write the report to FILE: `.html` writes a self-contained incident report page (plan, steps, per-role table, verdict, chart), any other name the JSON report')
            [CompletionResult]::new('--timeline', '--timeline', [CompletionResultType]::ParameterName, 'Write the timeline to FILE: `.svg` draws a chart, `.csv` writes rows. Repeat for both')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file to use')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The name of the kubeconfig context to use')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace scope for this request (default: the context''s namespace)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace scope for this request (default: the context''s namespace)')
            [CompletionResult]::new('--ignore-daemonsets', '--ignore-daemonsets', [CompletionResultType]::ParameterName, 'Leave DaemonSet-managed pods (otherwise the drain is refused)')
            [CompletionResult]::new('--delete-emptydir-data', '--delete-emptydir-data', [CompletionResultType]::ParameterName, 'Evict pods with emptyDir volumes (their data is lost)')
            [CompletionResult]::new('--force', '--force', [CompletionResultType]::ParameterName, 'Drain despite a predicted GAP or STALL, and evict pods that declare no controller')
            [CompletionResult]::new('--traffic', '--traffic', [CompletionResultType]::ParameterName, 'Send OpenAI-compatible requests (streaming chat completions and completions, alternating) through the serving path while this runs and account for every one: a request that fails makes the verdict a gap (exit 1) even when the pod counts held. The path must answer 5 requests in a row first, or nothing starts (exit 3)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'infera;sim' {
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('serve', 'serve', [CompletionResultType]::ParameterValue, 'Serve a simulated cluster until interrupted')
            [CompletionResult]::new('attach', 'attach', [CompletionResultType]::ParameterValue, 'Attach the simulated world (GPU nodes, kubelet, infera operator) to any Kubernetes API server, until interrupted')
            [CompletionResult]::new('scenarios', 'scenarios', [CompletionResultType]::ParameterValue, 'List the built-in scenarios')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'infera;sim;serve' {
            [CompletionResult]::new('--clock-skew', '--clock-skew', [CompletionResultType]::ParameterName, 'Run the cluster''s clock this far off the host''s (`-300s`, `90s`): every timestamp it writes and every `Date` header, as a control plane with a skewed clock (for testing clients'' skew handling)')
            [CompletionResult]::new('--truth', '--truth', [CompletionResultType]::ParameterName, 'Write the simulator''s ground truth (every InferaDeployment service''s Ready and routable counts, at every change; every request the simulated routers received and how it ended) to FILE when it stops')
            [CompletionResult]::new('--scenario', '--scenario', [CompletionResultType]::ParameterName, 'Built-in scenario name or a scenario file')
            [CompletionResult]::new('--port', '--port', [CompletionResultType]::ParameterName, 'Port on 127.0.0.1 (0 picks a free one)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token clients must present (default: a random one)')
            [CompletionResult]::new('--kubeconfig-out', '--kubeconfig-out', [CompletionResultType]::ParameterName, 'Write a kubeconfig for the simulator to PATH')
            [CompletionResult]::new('--speed', '--speed', [CompletionResultType]::ParameterName, 'Simulated seconds per wall-clock second')
            [CompletionResult]::new('--seed', '--seed', [CompletionResultType]::ParameterName, 'Random seed (default: the scenario''s)')
            [CompletionResult]::new('--operator', '--operator', [CompletionResultType]::ParameterName, 'The operator generation the simulated operator renders as (default: the scenario''s `operator`, else latest)')
            [CompletionResult]::new('--event-ttl', '--event-ttl', [CompletionResultType]::ParameterName, 'Delete each Event this long after its last write, in simulated time (kube-apiserver''s `--event-ttl`; watchers see it DELETED). `0` keeps Events')
            [CompletionResult]::new('--drop-watches-every', '--drop-watches-every', [CompletionResultType]::ParameterName, 'Drop every watch stream every this long (wall clock)')
            [CompletionResult]::new('--error-rate', '--error-rate', [CompletionResultType]::ParameterName, 'Answer this fraction of requests (0..1) with 5xx/429 bursts carrying `Retry-After`')
            [CompletionResult]::new('--conflict-rate', '--conflict-rate', [CompletionResultType]::ParameterName, 'Answer this fraction of updates with 409 Conflict')
            [CompletionResult]::new('--compact-every', '--compact-every', [CompletionResultType]::ParameterName, 'Compact the watch history every this long, forcing 410 Gone on resume')
            [CompletionResult]::new('--latency', '--latency', [CompletionResultType]::ParameterName, 'Add this latency to every request')
            [CompletionResult]::new('--restart-api-every', '--restart-api-every', [CompletionResultType]::ParameterName, 'Restart the API server listener every this long (state is kept)')
            [CompletionResult]::new('--cut', '--cut', [CompletionResultType]::ParameterName, 'Cut the clients off the API server AT after the start FOR this long: open connections are reset, new ones refused; the cluster goes on (repeatable; e.g. `--cut 30s:55s`)')
            [CompletionResult]::new('--blackhole', '--blackhole', [CompletionResultType]::ParameterName, 'Blackhole the clients'' connections AT after the start FOR this long: held open, nothing delivered either way until it ends (repeatable)')
            [CompletionResult]::new('--plain-http', '--plain-http', [CompletionResultType]::ParameterName, 'Serve plain HTTP instead of HTTPS with a generated CA. kubectl does not send a bearer token over plain HTTP, so only `kube`-based clients and curl can authenticate then')
            [CompletionResult]::new('--no-world', '--no-world', [CompletionResultType]::ParameterName, 'Serve an empty cluster (API server, Deployment/ReplicaSet controllers, scheduler, GC): no nodes, no manifests, no kubelet or operator, for `infera sim attach` to bring them')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'infera;sim;attach' {
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Kubeconfig of the cluster to attach to (default: KUBECONFIG, then ~/.kube/config)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Kubeconfig context (default: the current one)')
            [CompletionResult]::new('--scenario', '--scenario', [CompletionResultType]::ParameterName, 'Built-in scenario name or a scenario file')
            [CompletionResult]::new('--speed', '--speed', [CompletionResultType]::ParameterName, 'Simulated seconds per wall-clock second, for the world (image pulls, weight loads, probes); the control plane runs in real time')
            [CompletionResult]::new('--pod-cidr', '--pod-cidr', [CompletionResultType]::ParameterName, 'Pod IPs come from this range; listeners bind there, so it must be local to this machine (e.g. `127.77.0.0/16`, or a range routed to `lo` in the lab''s network namespace)')
            [CompletionResult]::new('--operator', '--operator', [CompletionResultType]::ParameterName, 'The operator generation the simulated operator renders as (default: the scenario''s `operator`, else latest)')
            [CompletionResult]::new('--truth', '--truth', [CompletionResultType]::ParameterName, 'On exit, write every request the simulated routers received and how it ended to FILE (the ground truth''s `{"requests": […]}`; the pods'' truth is the API server''s own)')
            [CompletionResult]::new('--no-operator', '--no-operator', [CompletionResultType]::ParameterName, 'Do not run the infera operator (a real one runs in the cluster; its pods need the simulated nodes'' toleration, or `--no-taint`)')
            [CompletionResult]::new('--no-taint', '--no-taint', [CompletionResultType]::ParameterName, 'Do not taint the simulated nodes')
            [CompletionResult]::new('--cleanup', '--cleanup', [CompletionResultType]::ParameterName, 'Remove what attach creates for the scenario (nodes, Leases, applied objects), then exit')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'infera;sim;scenarios' {
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'infera;sim;help' {
            [CompletionResult]::new('serve', 'serve', [CompletionResultType]::ParameterValue, 'Serve a simulated cluster until interrupted')
            [CompletionResult]::new('attach', 'attach', [CompletionResultType]::ParameterValue, 'Attach the simulated world (GPU nodes, kubelet, infera operator) to any Kubernetes API server, until interrupted')
            [CompletionResult]::new('scenarios', 'scenarios', [CompletionResultType]::ParameterValue, 'List the built-in scenarios')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'infera;sim;help;serve' {
            break
        }
        'infera;sim;help;attach' {
            break
        }
        'infera;sim;help;scenarios' {
            break
        }
        'infera;sim;help;help' {
            break
        }
        'infera;demo' {
            [CompletionResult]::new('--scenario', '--scenario', [CompletionResultType]::ParameterName, 'Built-in scenario name (see `infera sim scenarios`) or a scenario file')
            [CompletionResult]::new('--speed', '--speed', [CompletionResultType]::ParameterName, 'Simulated seconds per wall-clock second')
            [CompletionResult]::new('--stall-after', '--stall-after', [CompletionResultType]::ParameterName, 'A surge pod Unschedulable for this long (simulated time) is a stall')
            [CompletionResult]::new('--sample-interval', '--sample-interval', [CompletionResultType]::ParameterName, 'Seconds between two readiness samples (the field check uses 10 s)')
            [CompletionResult]::new('--min-ready', '--min-ready', [CompletionResultType]::ParameterName, 'A role below this many Ready or routable pods counts as a gap')
            [CompletionResult]::new('--report', '--report', [CompletionResultType]::ParameterName, 'Write the report to FILE: `.html` writes a self-contained incident report page (plan, steps, per-role table, verdict, chart), any other name the JSON report')
            [CompletionResult]::new('--timeline', '--timeline', [CompletionResultType]::ParameterName, 'Write the timeline to FILE: `.svg` draws a chart, `.csv` writes rows. Repeat for both')
            [CompletionResult]::new('--no-traffic', '--no-traffic', [CompletionResultType]::ParameterName, 'Send no requests through the serving path (by default the demo sends them and prints their tally, as `--traffic` does)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'infera;monitor' {
            [CompletionResult]::new('-l', '-l', [CompletionResultType]::ParameterName, 'Only the InferaDeployments, Deployments and StatefulSets whose labels match this selector (`team=a`, `tier in (a,b)`, `!canary`)')
            [CompletionResult]::new('--selector', '--selector', [CompletionResultType]::ParameterName, 'Only the InferaDeployments, Deployments and StatefulSets whose labels match this selector (`team=a`, `tier in (a,b)`, `!canary`)')
            [CompletionResult]::new('--min-ready', '--min-ready', [CompletionResultType]::ParameterName, 'A role with fewer Ready or routable pods than this is below the floor (the below-floor counters and alert)')
            [CompletionResult]::new('--listen', '--listen', [CompletionResultType]::ParameterName, 'Serve `/metrics`, `/healthz` and `/readyz` on this address (`0.0.0.0:8491` in a pod; port 0 picks a free one)')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'With `--print-rules`: a PrometheusRule, or a plain rules file')
            [CompletionResult]::new('--image', '--image', [CompletionResultType]::ParameterName, 'Image of the monitor''s Deployment (`--print-manifests`)')
            [CompletionResult]::new('--no-routable-for', '--no-routable-for', [CompletionResultType]::ParameterName, 'Alert: a role with no routable pod this long (critical)')
            [CompletionResult]::new('--below-min-for', '--below-min-for', [CompletionResultType]::ParameterName, 'Alert: a rolling role below `--min-ready` this long')
            [CompletionResult]::new('--stalled-for', '--stalled-for', [CompletionResultType]::ParameterName, 'Alert: a pod of a rolling role unschedulable this long (a stalled surge; `infera rollout --stall-after` is 5m too)')
            [CompletionResult]::new('--ready-not-routable-for', '--ready-not-routable-for', [CompletionResultType]::ParameterName, 'Alert: Ready pods not routable this long (readiness that means nothing)')
            [CompletionResult]::new('--watch-down-for', '--watch-down-for', [CompletionResultType]::ParameterName, 'Alert: a watch of the monitor not current this long')
            [CompletionResult]::new('--request-failure-ratio', '--request-failure-ratio', [CompletionResultType]::ParameterName, 'Alert: the failure ratio of attributed probe requests over 5m above this (a fraction: 0.01 is 1 %)')
            [CompletionResult]::new('--request-failures-for', '--request-failures-for', [CompletionResultType]::ParameterName, 'Alert: that ratio above its threshold this long')
            [CompletionResult]::new('--probe-interval', '--probe-interval', [CompletionResultType]::ParameterName, 'Send one small OpenAI request through the router of each InferaDeployment in scope this often (at least 1s), beside a control request to the API server''s /readyz')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file to use')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The name of the kubeconfig context to use')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace scope for this request (default: the context''s namespace)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace scope for this request (default: the context''s namespace)')
            [CompletionResult]::new('-A', '-A ', [CompletionResultType]::ParameterName, 'Watch every namespace (one cluster-wide list+watch per resource) instead of the `-n` namespace')
            [CompletionResult]::new('--all-namespaces', '--all-namespaces', [CompletionResultType]::ParameterName, 'Watch every namespace (one cluster-wide list+watch per resource) instead of the `-n` namespace')
            [CompletionResult]::new('--print-rules', '--print-rules', [CompletionResultType]::ParameterName, 'Print the alert rules and exit')
            [CompletionResult]::new('--print-manifests', '--print-manifests', [CompletionResultType]::ParameterName, 'Print the ServiceAccount, RBAC, Deployment, Service and ServiceMonitor that run the monitor in the `-n` namespace, and exit')
            [CompletionResult]::new('--no-probe', '--no-probe', [CompletionResultType]::ParameterName, 'Send no requests (no infera_requests_total, no TTFT)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'infera;rbac' {
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Namespace of the Role (and of the ServiceAccount the bindings name) (default: the context''s namespace)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'Namespace of the Role (and of the ServiceAccount the bindings name) (default: the context''s namespace)')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('-A', '-A ', [CompletionResultType]::ParameterName, 'Grant the Role''s rules in every namespace (a ClusterRole and ClusterRoleBinding instead), for `audit -A` and `lint --cluster -A`')
            [CompletionResult]::new('--all-namespaces', '--all-namespaces', [CompletionResultType]::ParameterName, 'Grant the Role''s rules in every namespace (a ClusterRole and ClusterRoleBinding instead), for `audit -A` and `lint --cluster -A`')
            [CompletionResult]::new('--drain', '--drain', [CompletionResultType]::ParameterName, 'Print what `infera drain` needs: the same rules in every namespace (it moves and evicts wherever a pod runs) and the `infera-drain` ClusterRole (nodes, evictions, PodDisruptionBudgets, owners)')
            [CompletionResult]::new('--traffic', '--traffic', [CompletionResultType]::ParameterName, 'Also grant what `--traffic` sends through the API server''s service proxy to the router (`get` and `create` on `services/proxy`)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'infera;policy' {
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--operator', '--operator', [CompletionResultType]::ParameterName, 'The operator generation whose rendering the InferaDeployment checks follow (default: the `operator` key of `.infera-lint.yaml` found upward from the cwd, else latest)')
            [CompletionResult]::new('--fail-on', '--fail-on', [CompletionResultType]::ParameterName, 'Deny findings at or above this severity (below it: warn); `never` denies nothing')
            [CompletionResult]::new('--action', '--action', [CompletionResultType]::ParameterName, 'What the bindings do: by severity (`--fail-on`), or warn only')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'infera;completions' {
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'infera;generate' {
            [CompletionResult]::new('--dir', '--dir', [CompletionResultType]::ParameterName, 'Directory holding `completions/`, `man/` and `docs/lint.md`')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log to stderr: -v requests (verb, path, status, latency), watch restarts, retries and driver decisions; -vv debug. `RUST_LOG` overrides. Credentials are never logged')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'infera;help' {
            [CompletionResult]::new('lint', 'lint', [CompletionResultType]::ParameterValue, 'Audit manifests for configurations where a surge rollout would stall, gap or silently retire a serving pod')
            [CompletionResult]::new('rules', 'rules', [CompletionResultType]::ParameterValue, 'List the lint rules, or print one rule''s documentation')
            [CompletionResult]::new('render', 'render', [CompletionResultType]::ParameterValue, 'Print the Deployments/LeaderWorkerSets the infera operator would create from an InferaDeployment, annotated with the predicted rollout strategy')
            [CompletionResult]::new('rollout', 'rollout', [CompletionResultType]::ParameterValue, 'Drive a worker rollout step by step: surge, wait for /ready, retire the old pod, one leg at a time')
            [CompletionResult]::new('audit', 'audit', [CompletionResultType]::ParameterValue, 'Sample readiness and routability per role while someone else rolls, and report the minimum number of Ready and routable pods')
            [CompletionResult]::new('drain', 'drain', [CompletionResultType]::ParameterValue, 'Drain node(s) as a rollout: plan every pod on them, move the serving workers surge-first, evict the rest honouring PodDisruptionBudgets')
            [CompletionResult]::new('sim', 'sim', [CompletionResultType]::ParameterValue, 'A local simulated cluster that speaks the real Kubernetes API')
            [CompletionResult]::new('demo', 'demo', [CompletionResultType]::ParameterValue, 'Roll a worker on the built-in simulated cluster and show the evidence')
            [CompletionResult]::new('monitor', 'monitor', [CompletionResultType]::ParameterValue, 'Audit continuously as a service: Prometheus metrics per role on `/metrics`, alert rules (`--print-rules`), in-cluster manifests (`--print-manifests`)')
            [CompletionResult]::new('rbac', 'rbac', [CompletionResultType]::ParameterValue, 'Print the minimal RBAC Role that `infera rollout` and `infera audit` need')
            [CompletionResult]::new('policy', 'policy', [CompletionResultType]::ParameterValue, 'Print lint''s rules as ValidatingAdmissionPolicies and their bindings (`kubectl infera policy | kubectl apply -f -`)')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print a shell completion script to stdout')
            [CompletionResult]::new('generate', 'generate', [CompletionResultType]::ParameterValue, 'Regenerate `completions/` and `man/` from these flag definitions, and the rules table of `docs/lint.md` from the rule registry')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'infera;help;lint' {
            break
        }
        'infera;help;rules' {
            break
        }
        'infera;help;render' {
            break
        }
        'infera;help;rollout' {
            [CompletionResult]::new('restart', 'restart', [CompletionResultType]::ParameterValue, 'Restart the worker pods of TARGET, one service at a time')
            [CompletionResult]::new('set-image', 'set-image', [CompletionResultType]::ParameterValue, 'Change the image of `--service` in TARGET and roll it')
            [CompletionResult]::new('history', 'history', [CompletionResultType]::ParameterValue, 'Print the last rollouts infera drove on TARGET, newest first')
            break
        }
        'infera;help;rollout;restart' {
            break
        }
        'infera;help;rollout;set-image' {
            break
        }
        'infera;help;rollout;history' {
            break
        }
        'infera;help;audit' {
            break
        }
        'infera;help;drain' {
            break
        }
        'infera;help;sim' {
            [CompletionResult]::new('serve', 'serve', [CompletionResultType]::ParameterValue, 'Serve a simulated cluster until interrupted')
            [CompletionResult]::new('attach', 'attach', [CompletionResultType]::ParameterValue, 'Attach the simulated world (GPU nodes, kubelet, infera operator) to any Kubernetes API server, until interrupted')
            [CompletionResult]::new('scenarios', 'scenarios', [CompletionResultType]::ParameterValue, 'List the built-in scenarios')
            break
        }
        'infera;help;sim;serve' {
            break
        }
        'infera;help;sim;attach' {
            break
        }
        'infera;help;sim;scenarios' {
            break
        }
        'infera;help;demo' {
            break
        }
        'infera;help;monitor' {
            break
        }
        'infera;help;rbac' {
            break
        }
        'infera;help;policy' {
            break
        }
        'infera;help;completions' {
            break
        }
        'infera;help;generate' {
            break
        }
        'infera;help;help' {
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
