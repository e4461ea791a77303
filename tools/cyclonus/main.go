// Command cyclonus is Cyclonus's own CLI, every upstream command unchanged
// (`cyclonus analyze --mode probe --policy-path DIR --probe-path FILE` is
// upstream's code), plus one command of ours: `truth-table`.
//
// `truth-table` answers what `analyze --mode probe` answers, for every
// ordered pair of pods and every port each destination serves, and prints
// the answers as text instead of one table per port. The probe tables are
// N x N cells per probed port (a 5,000-pod table is 25 million cells, three
// times per port), which upstream builds in memory and renders with
// tablewriter: past a few hundred pods that, not the policy engine, is the
// run time. truth-table reads the same inputs with upstream's readers and
// asks upstream's engine (matcher.Policy.IsTrafficAllowed, on the Traffic of
// the probe.Job upstream's JobBuilder builds for ProbeAllAvailable) one
// question per pair and port, as upstream's SimulatedJobRunner does, one at
// a time, without its per-job trace formatting.
package main

import (
	"bufio"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/mattfenwick/collections/pkg/json"
	"github.com/mattfenwick/cyclonus/pkg/cli"
	"github.com/mattfenwick/cyclonus/pkg/connectivity/probe"
	"github.com/mattfenwick/cyclonus/pkg/kube"
	"github.com/mattfenwick/cyclonus/pkg/matcher"
	"github.com/spf13/cobra"
)

func main() {
	root := cli.SetupRootCommand()
	root.AddCommand(truthTableCommand())
	if err := root.Execute(); err != nil {
		fmt.Fprintf(os.Stderr, "cyclonus: %v\n", err)
		os.Exit(1)
	}
}

type truthTableArgs struct {
	PolicyPath       string
	ProbePath        string
	SimplifyPolicies bool
	Output           string
	Every            int
	Offset           int
}

func truthTableCommand() *cobra.Command {
	args := &truthTableArgs{}
	command := &cobra.Command{
		Use:   "truth-table",
		Short: "every pod pair and served port through the policy engine (what analyze --mode probe answers), as text",
		Long: `Reads policies as 'analyze --policy-path' does and pods and namespaces from the
'Resources' of an 'analyze --probe-path' file, then asks the engine about every
ordered pair of pods (a pod with itself too) on every port each destination's
containers serve. Prints one line per pair with at least one allowed port:

  FROM<TAB>TO<TAB>PROTO/PORT[ PROTO/PORT...]

FROM and TO are NAMESPACE/NAME; pairs with nothing allowed are not printed.
Senders are taken in NAMESPACE/NAME order; --every K --offset I asks only about
senders I, I+K, I+2K, ... (every receiver, every port), a sample for runs that would
take hours.`,
		Args: cobra.ExactArgs(0),
		RunE: func(cmd *cobra.Command, as []string) error {
			return runTruthTable(args)
		},
	}
	command.Flags().StringVar(&args.PolicyPath, "policy-path", "", "a file or a directory of NetworkPolicy (or NetworkPolicyList) files, read as analyze reads them")
	command.Flags().StringVar(&args.ProbePath, "probe-path", "", "an analyze --probe-path JSON file; its Resources (namespaces and pods) are used, its Probes ignored")
	command.Flags().BoolVar(&args.SimplifyPolicies, "simplify-policies", true, "as analyze's flag of that name")
	command.Flags().StringVarP(&args.Output, "output", "o", "-", "where to write (- for stdout)")
	command.Flags().IntVar(&args.Every, "every", 1, "ask about every K-th sender only")
	command.Flags().IntVar(&args.Offset, "offset", 0, "the first sender asked about (0-based, in sender order)")
	_ = command.MarkFlagRequired("policy-path")
	_ = command.MarkFlagRequired("probe-path")
	return command
}

func runTruthTable(args *truthTableArgs) error {
	kubePolicies, err := kube.ReadNetworkPoliciesFromPath(args.PolicyPath)
	if err != nil {
		return err
	}
	config, err := json.ParseFile[cli.SyntheticProbeConnectivityConfig](args.ProbePath)
	if err != nil {
		return err
	}
	resources := config.Resources
	if resources == nil {
		return fmt.Errorf("%s: no Resources", args.ProbePath)
	}
	if args.Every < 1 || args.Offset < 0 {
		return fmt.Errorf("--every must be at least 1 and --offset at least 0")
	}
	policies := matcher.BuildNetworkPolicies(args.SimplifyPolicies, kubePolicies)

	out := os.Stdout
	if args.Output != "-" {
		out, err = os.Create(args.Output)
		if err != nil {
			return err
		}
		defer out.Close()
	}
	w := bufio.NewWriterSize(out, 1<<20)
	if err := truthTable(policies, resources, args.Every, args.Offset, w); err != nil {
		return err
	}
	return w.Flush()
}

// truthTable mirrors probe.JobBuilder.GetJobsAllAvailableServers and
// probe.SimulatedJobRunner.RunJob, one job at a time.
func truthTable(policies *matcher.Policy, resources *probe.Resources, every, offset int, w *bufio.Writer) error {
	pods := append([]*probe.Pod(nil), resources.Pods...)
	sort.SliceStable(pods, func(i, j int) bool {
		return pods[i].PodString().String() < pods[j].PodString().String()
	})
	allowed := make([]string, 0, 8)
	for i := offset; i < len(pods); i += every {
		podFrom := pods[i]
		if len(podFrom.Containers) == 0 {
			return fmt.Errorf("pod %s has no containers", podFrom.PodString())
		}
		fromKey := podFrom.PodString().String()
		for _, podTo := range pods {
			allowed = allowed[:0]
			for _, contTo := range podTo.Containers {
				job := &probe.Job{
					FromKey:             fromKey,
					FromNamespace:       podFrom.Namespace,
					FromNamespaceLabels: resources.Namespaces[podFrom.Namespace],
					FromPod:             podFrom.Name,
					FromPodLabels:       podFrom.Labels,
					FromContainer:       podFrom.Containers[0].Name,
					FromIP:              podFrom.IP,
					ToKey:               podTo.PodString().String(),
					ToNamespace:         podTo.Namespace,
					ToNamespaceLabels:   resources.Namespaces[podTo.Namespace],
					ToPodLabels:         podTo.Labels,
					ToContainer:         contTo.Name,
					ToIP:                podTo.IP,
					ResolvedPort:        contTo.Port,
					ResolvedPortName:    contTo.PortName,
					Protocol:            contTo.Protocol,
				}
				if policies.IsTrafficAllowed(job.Traffic()).IsAllowed() {
					allowed = append(allowed, fmt.Sprintf("%s/%d", contTo.Protocol, contTo.Port))
				}
			}
			if len(allowed) > 0 {
				fmt.Fprintf(w, "%s\t%s\t%s\n", fromKey, podTo.PodString().String(), strings.Join(allowed, " "))
			}
		}
	}
	return nil
}
