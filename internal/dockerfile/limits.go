package dockerfile

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pallet-dev/pallet/internal/image"
	"github.com/pallet-dev/pallet/internal/lazyre"
	"github.com/pallet-dev/pallet/internal/plan"
)

// Limits on what a Dockerfile's words expand to. A word that names a
// variable many times multiplies its size: five lines of ENV B=$A$A...
// (sixteen times each) made a 69 MB image config from a 360-byte
// Dockerfile, and a sixth line ran for minutes. Each word is measured
// while BuildKit's lexer expands it, so the work stops near the limit,
// not at the size the word asks for.
const (
	// maxWord bounds one word once expanded: a value of the image config
	// (image.MaxConfigValue, far above a real PATH or label).
	maxWord = image.MaxConfigValue
	// maxExpanded bounds all the words expanded for one platform, global
	// ARGs included: what they make is the image config, which is at most
	// image.DefaultMaxManifestSize, and the variables it is made from.
	maxExpanded = image.DefaultMaxManifestSize
	// maxArgs bounds the --arg values of a build, each at most maxWord.
	maxArgs = image.DefaultMaxManifestSize
	// maxFromStages bounds the sources COPY --from takes from stages,
	// for one platform: a COPY --from=stage repeats each source the
	// stage placed, so stages that each copy the one before twice double
	// them (40 such stages ran until killed), and a chain of stages each
	// copying the one before repeats them all at every step. The sources
	// a COPY takes from the build context are not counted: they are the
	// context's files, however many.
	maxFromStages = plan.MaxPlacements
	// maxWork bounds the steps planning takes for one platform: each
	// ENV or ARG, and each variable a word names, looks through the
	// variables set so far, and each stage built FROM another copies
	// what that one holds. 100,000 ENV lines (1 MB) ran for minutes, a
	// chain of 20,000 stages on 2000 variables took 25 s and 1.5 GB.
	// Real Dockerfiles take thousands of steps; 10^8 is a few seconds,
	// the bound a recipe's YAML keys have too (recipe.MaxKeyPairs).
	maxWork = 100_000_000
)

// errWork is the error of a plan past maxWork.
var errWork = fmt.Errorf("planning the Dockerfile would take over %d steps (each ENV, ARG and variable used looks through the variables set so far; each stage built FROM another copies what that one holds): set fewer variables, or build fewer stages on others", maxWork)

// spend counts n steps of planning, failing past maxWork.
func (e *evaluator) spend(n int) error {
	if e.work += n; e.work > maxWork {
		return errWork
	}
	return nil
}

// substRE finds the names of ${NAME/pattern/replacement}: the one
// expansion whose result can be larger than its parts added (the
// replacement is put in once per match).
var substRE = lazyre.New(`\$\{([\p{L}\p{N}_]+|[@*#?$!0-])/`)

// meter is the lexer's view of some variables while it expands one word.
// It keeps an upper bound of the word's expansion: the word's length,
// plus each value the lexer asks for, or times it for a name the word
// substitutes in. Once the bound would pass limit and the word's length
// (the names the values replace), every value is empty: the lexer
// finishes the word at little cost, and the word is refused. A word that
// ends up over limit is refused too.
type meter struct {
	*vars
	e *evaluator
	// subst holds, for each name the word substitutes in, the longest
	// replacement it gives, or -1 where one is not plain text.
	subst map[string]int
	// bound is an upper bound of the word's expansion so far; past cap,
	// which is limit and the word's length, the meter is over.
	bound, cap, limit int
	over              bool
	// missed are the names asked for and not set: the lexer's unmatched
	// names, for the words whose expansion does not report them.
	missed map[string]struct{}
}

// Get implements shell.EnvGetter.
func (m *meter) Get(k string) (string, bool) {
	if m.over {
		_, ok := m.vars.Get(k)
		return "", ok
	}
	// Each look-up reads through the variables.
	if m.e.spend(len(m.vars.env)) != nil {
		m.over = true
		return "", true
	}
	v, ok := m.vars.Get(k)
	if !ok {
		if m.missed == nil {
			m.missed = map[string]struct{}{}
		}
		m.missed[k] = struct{}{}
		return "", ok
	}
	b := m.bound + len(v)
	if r, ok := m.subst[k]; ok {
		// ${K/p/r} is at most (len(K)+1)·(len(r)+1). A plain r is its
		// own length, and adds to the bound; one that may expand is
		// expanded before K is asked for, so it is within the bound so
		// far, which the product then replaces. Either is charged to
		// each look-up of K, the lexer's asking not saying which is
		// the substitution's.
		mul := m.bound + 1
		if r >= 0 {
			mul = r + 1
		}
		switch {
		case len(v)+1 > m.cap/mul:
			b = m.cap + 1
		case r >= 0:
			b = m.bound + (len(v)+1)*mul
		default:
			b = mul * (len(v) + 1)
		}
	}
	if b > m.cap {
		m.over = true
		return "", true
	}
	m.bound = b
	return v, true
}

// metered returns v measured while word is expanded, for an instruction
// (counted against maxExpanded) or not (a FROM line, expanded for each
// look at the stages).
func (e *evaluator) metered(word string, v *vars, counted bool) *meter {
	m := &meter{vars: v, e: e, bound: len(word), limit: maxWord}
	if counted {
		m.limit = min(maxWord, maxExpanded-e.expanded)
	}
	m.cap = m.limit + len(word)
	for _, ix := range substRE().FindAllStringSubmatchIndex(word, -1) {
		if m.subst == nil {
			m.subst = map[string]int{}
		}
		name := word[ix[2]:ix[3]]
		r, plain := plainReplacement(word[ix[1]:])
		prev, seen := m.subst[name]
		switch {
		case !plain || prev < 0 && seen:
			m.subst[name] = -1
		default:
			m.subst[name] = max(prev, r)
		}
	}
	return m
}

// plainReplacement reads the rest of a ${NAME/pattern/replacement} after
// its first / and gives the replacement's length where the lexer takes
// both as they are written: without a character it expands or unquotes
// (a $, quote, escape or heredoc's <), the pattern ends at the next /
// and the replacement at the next }, as its processStopOn reads them.
// Three substitutions of a 200-byte value in one word were refused as
// over 1 MiB while each substitution's result was bounded by the word so
// far, all three multiplied.
func plainReplacement(rest string) (int, bool) {
	rest = strings.TrimPrefix(rest, "/")
	pat, after, ok := strings.Cut(rest, "/")
	if !ok {
		return 0, false
	}
	repl, _, ok := strings.Cut(after, "}")
	if !ok || strings.ContainsAny(pat+repl, "$'\"\\`<") {
		return 0, false
	}
	return len(repl), true
}

// spent checks a word expanded with m to result; a counted word adds its
// size to the Dockerfile's.
func (e *evaluator) spent(m *meter, word string, result int, counted bool) error {
	if e.work > maxWork {
		return errWork
	}
	if m.over || result > m.limit {
		short := word
		if len(short) > 40 {
			short = short[:40] + "..."
		}
		if m.limit < maxWord {
			return fmt.Errorf("%q: with it the Dockerfile's words would expand to over %d bytes (4 MiB) in all; the image config, which they make, is at most that", short, maxExpanded)
		}
		return fmt.Errorf("%q would expand to over %d bytes (1 MiB); a value of the image config is at most that", short, maxWord)
	}
	if counted {
		e.expanded += result
	}
	return nil
}

// processWord is the lexer's ProcessWord of word with the variables v,
// metered and checked as metered and spent say.
func (e *evaluator) processWord(word string, v *vars, counted bool) (string, error) {
	m := e.metered(word, v, counted)
	res, _, err := e.lex.ProcessWord(word, m)
	if err == nil {
		err = e.spent(m, word, len(res), counted)
	}
	return res, err
}

// checkArgSizes refuses --arg values too large to be a value of the
// image config, one by one and in all.
func checkArgSizes(args map[string]string) error {
	total := 0
	for _, k := range slices.Sorted(maps.Keys(args)) {
		v := args[k]
		if len(v) > maxWord {
			return fmt.Errorf("--arg %s: %d bytes; a value is at most %d (1 MiB), as a value of the image config is", k, len(v), maxWord)
		}
		total += len(k) + len(v)
	}
	if total > maxArgs {
		return fmt.Errorf("--arg: %d bytes in all; at most %d (4 MiB), as the image config is", total, maxArgs)
	}
	return nil
}
