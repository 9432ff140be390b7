package main

import (
	"context"
	"fmt"
	"strings"

	"idemlab/studentloop"
)

func runHint(ctx context.Context, in *invocation) error {
	check := in.String("check", "", "a hint for this check ID instead of the first failing one")
	st, done, err := startLoop(in)
	if done {
		return err
	}
	root, p, n := st.root, st.progress, st.n
	sp := p.Stage(n)
	topic := *check
	if topic == "" {
		topic = studentloop.HintTopic(sp)
	}
	hintStage, key := n, fmt.Sprintf("stage%d", n)
	if topic != "stage" {
		if hintStage, err = studentloop.CheckStage(topic); err != nil {
			return err
		}
		key = topic
	}
	hints, err := studentloop.LoadHints(root, hintStage)
	if err != nil {
		return err
	}
	tiers, ok := hints[topic]
	if !ok {
		return fmt.Errorf("no hint for %s in %s", topic, studentloop.HintsPath(hintStage))
	}
	switch {
	case sp.State == studentloop.NotStarted && *check == "":
		fmt.Fprintf(in.stdout, "stage %d has not run yet: %s (or %s) first, so that the hint is about the check that fails.\n\n",
			n, studentloop.Command("check", n), studentloop.Command("watch", n))
	case topic == "stage":
		fmt.Fprintf(in.stdout, "stage %d at its last run: %s.\n\n", n, sp.State)
	default:
		fmt.Fprintf(in.stdout, "hint for %s, the first failing check of stage %d at its last run:\n\n", topic, n)
	}
	tier := p.NextTier(key, studentloop.Tiers)
	for i := 0; i < tier; i++ {
		fmt.Fprintf(in.stdout, "%d. %s: %s\n\n", i+1, strings.ToUpper(studentloop.TierNames[i][:1])+studentloop.TierNames[i][1:], tiers[i])
	}
	if tier < studentloop.Tiers {
		fmt.Fprintf(in.stdout, "(hint %d of %d: ask again for %s)\n", tier, studentloop.Tiers, studentloop.TierNames[tier])
	} else {
		fmt.Fprintf(in.stdout, "(that was the last hint: the lesson's exercise, then %s if you must)\n", studentloop.Command("diff", n))
	}
	return p.Save(root)
}
