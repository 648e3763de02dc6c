package golicenses

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	classifier "github.com/google/licenseclassifier/v2"
)

// corpusDir is the classifier module's corpus on disk: the embedded copy
// cannot be listed below its top directory.
func corpusDir(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/google/licenseclassifier/v2").Output()
	if err != nil {
		t.Fatalf("go list -m github.com/google/licenseclassifier/v2: %v", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "assets")
}

// corpusFiles is every document of the classifier's corpus, by its
// path there (Category/Name/variant).
func corpusFiles(t *testing.T) []string {
	t.Helper()
	var paths []string
	err := fs.WalkDir(os.DirFS(corpusDir(t)), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.Count(p, "/") == 2 {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return paths
}

// The quick corpus holds every document the corpus has under its names,
// so that it matches as the whole corpus does for those licences.
func TestQuickCorpusIsWhole(t *testing.T) {
	names := map[string]bool{}
	for _, p := range quickCorpus {
		names[strings.Split(p, "/")[1]] = true
	}
	var want []string
	for _, p := range corpusFiles(t) {
		if names[strings.Split(p, "/")[1]] {
			want = append(want, p)
		}
	}
	got := slices.Sorted(slices.Values(quickCorpus))
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("quickCorpus is\n%q\nthe corpus holds under its names\n%q", got, want)
	}
	if _, err := quickClassifier(); err != nil {
		t.Fatal(err)
	}
}

// Wherever the quick classifier answers, the whole corpus answers the
// same: for every document of the corpus (those of other licences
// included, such as NPL, which contains MPL, and 0BSD, which ISC
// contains), for the quick corpus's licences with a copyright line, and
// for exact licences with another licence's text before, after or on
// their last line.
func TestQuickClassifyAgrees(t *testing.T) {
	dir := corpusDir(t)
	full, err := defaultClassifier()
	if err != nil {
		t.Fatal(err)
	}
	inputs := map[string]string{}
	for _, p := range corpusFiles(t) {
		// Under the race detector, matching the whole corpus takes ten
		// times as long; the sweep is the plain run's, the quick
		// corpus's own texts and the ones made here are both's.
		if raceEnabled && !slices.Contains(quickCorpus, p) && p != "License/NPL-1.1/license.txt" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		inputs[p] = string(data)
		if slices.Contains(quickCorpus, p) {
			inputs[p+" with a copyright line"] = "Copyright (c) 2021 The Example Authors. All rights reserved.\n\n" + string(data)
		}
	}
	mit, apache, afl := corpus("MIT"), corpus("Apache-2.0"), strings.TrimSpace(corpusText(t, dir, "Header/AFL-3.0/header.txt"))
	inputs["MIT then Apache-2.0"] = mit + "\n\n" + apache
	inputs["MIT with an AFL header on its last line"] = strings.TrimRight(mit, "\n") + " " + afl + "\n"
	inputs["MIT with an AFL header after it"] = mit + "\n" + afl + "\n"
	inputs["an AFL header, then MIT"] = afl + "\n\n" + mit
	inputs["MIT with a word more"] = strings.TrimRight(mit, "\n") + " furthermore\n"
	inputs["MIT with CRLF"] = strings.ReplaceAll(mit, "\n", "\r\n")
	inputs["MIT on one line"] = strings.Join(strings.Fields(mit), " ")
	inputs["a thousand copies of MIT"] = strings.Repeat("Copyright (c) 2020 X\n\n"+mit, 1000)

	answered := map[string]bool{}
	for name, text := range inputs {
		quick, ok := quickClassify([]byte(text))
		if !ok {
			continue
		}
		answered[name] = true
		res := full.Match([]byte(text))
		if want := classificationOf(licenseMatches(res.Matches)); !reflect.DeepEqual(quick, want) {
			t.Errorf("%s: the quick classifier says %+v, the whole corpus %+v", name, quick, want)
		}
	}
	// It must also answer: exact copies of common licences are what it
	// is for, and what shows that it spares the whole corpus's load.
	for _, name := range []string{
		"License/MIT/pristine.txt with a copyright line",
		"License/Apache-2.0/pristine.txt",
		"License/BSD-3-Clause/pristine.txt with a copyright line",
		"License/ISC/pristine.txt",
		"MIT then Apache-2.0",
		"MIT with CRLF",
	} {
		if !answered[name] {
			t.Errorf("the quick classifier left %s to the whole corpus", name)
		}
	}
	// Text that no exact match covers is the whole corpus's to read.
	for _, name := range []string{
		"MIT with an AFL header on its last line",
		"MIT with an AFL header after it",
		"an AFL header, then MIT",
		"MIT with a word more",
		"License/NPL-1.1/license.txt",
		// Over maxQuickText: matched against itself, it took 12 s.
		"a thousand copies of MIT",
	} {
		if _, ok := inputs[name]; !ok {
			t.Fatalf("no input %s", name)
		}
		if answered[name] {
			t.Errorf("the quick classifier answered %s", name)
		}
	}
	t.Logf("quick answers for %d of %d texts", len(answered), len(inputs))
}

// A build whose licence texts are all copies of common licences never
// loads the whole corpus (a second of CPU and 65 MiB); one with another
// licence does, once.
func TestCommonLicencesSpareTheCorpus(t *testing.T) {
	loads := 0
	defer func(f func() (*classifier.Classifier, error)) { defaultClassifier = f }(defaultClassifier)
	whole := defaultClassifier
	defaultClassifier = func() (*classifier.Classifier, error) {
		loads++
		return whole()
	}
	for _, text := range []string{
		"Copyright (c) 2016 Someone\n\n" + corpus("MIT"),
		corpus("Apache-2.0"),
		"Copyright 2009 The Go Authors.\n\n" + corpus("BSD-3-Clause"),
	} {
		cl, err := classify([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		if cl.confidence != 1 || len(cl.ids) != 1 {
			t.Errorf("classify = %+v, want one exact licence", cl)
		}
	}
	if loads != 0 {
		t.Errorf("the whole corpus was asked for %d times for common licences", loads)
	}
	cl, err := classify([]byte(corpus("GPL-2.0")))
	if err != nil {
		t.Fatal(err)
	}
	if cl.spdx != "GPL-2.0" || loads != 1 {
		t.Errorf("classify(GPL-2.0) = %q after %d loads, want GPL-2.0 from the whole corpus", cl.spdx, loads)
	}
}

func corpusText(t *testing.T, dir, p string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, p))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
