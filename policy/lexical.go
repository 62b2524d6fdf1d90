package policy

import (
	"context"
	"math"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// DefaultLexicalThreshold is the default score at which [LexicalMatcher]
// reports a segment: the "standard" sensitivity, chosen for few false
// alarms. It is the threshold of highest recall, among the hundredths from
// 0.05 to 0.95, whose false-positive rate on the tuning half of the kit's
// evaluation set (package policy/semeval, docs/policy.md) is at most 0.10
// (semeval.DefaultMaxFPR), not the one of best F1, which on a set that is
// half matches rewards flagging nearly everything. Measured on the held-out
// half at 0.47: precision 0.80, recall 0.40, false-positive rate 0.09,
// Youden's J 0.31, F1 0.53. So it flags 9% of the messages that are not
// about an instruction, and misses 60% of those that are, mostly
// paraphrases, synonyms outside its table and other languages.
const DefaultLexicalThreshold = 0.47

// LexicalRecallThreshold is the score at which [LexicalMatcher] reports a
// segment at the "high" sensitivity ([LexicalMatcher.RecallThreshold]), for
// Administrators who prefer recall: the threshold of best F1, among the
// hundredths from 0.05 to 0.95, on the tuning half of the kit's evaluation
// set. Measured on the held-out half at 0.26: precision 0.63, recall 0.83,
// false-positive rate 0.43, Youden's J 0.39, F1 0.72: it catches most
// matches and flags 43% of the messages that are not.
const LexicalRecallThreshold = 0.26

// lexicalTermWeight is the weight of the term cosine in a LexicalMatcher
// score; the character n-gram cosine has the rest.
const lexicalTermWeight = 0.7

// LexicalMatcher is the default built-in [SemanticMatcher]: it needs no
// network and compares the words of two texts, as concepts where it knows
// them. Each text is normalised (Unicode compatibility decomposition, accents
// dropped, ß, æ and œ spelt out, case folded) and cut into words; the stop
// words of English, German, French and Spanish are dropped, and every other
// word is stemmed by a light suffix stripper shared by the four languages.
// A stem found in a small built-in table of policy vocabulary (acquisitions,
// salaries, health, credentials, customers, lawsuits, layoffs ... in the four
// languages) stands for its concept, so that "buy", "takeover", "Übernahme"
// and "adquisición" are one term. The score of a segment for a query mixes
// the cosine similarity of their weighted term sets (0.7) with that of the
// character trigrams of their remaining words (0.3), which catches spellings
// and inflections the stemmer misses; a segment matches at Threshold. A
// concept weighs 2, a concept naming who or what a sentence is about
// (customers, employees, companies, products, present in sensitive and
// everyday sentences alike) 0.5, any other word 1.
//
// It catches rewordings and the synonyms of its table, including across the
// four languages, not meaning in general: it cannot tell "we are not buying
// Contoso" from "we are buying Contoso", and a paraphrase in words outside
// its table scores low. Use an embeddings model (package policy/embeddings)
// for meaning.
type LexicalMatcher struct {
	// Threshold is the score (0..1] at which a segment matches; 0 means
	// DefaultLexicalThreshold.
	Threshold float64
}

var _ SemanticScorer = LexicalMatcher{}

// Match implements [SemanticMatcher]. It fails only when ctx is done.
func (m LexicalMatcher) Match(ctx context.Context, segments []string, queries []string) ([][]int, error) {
	scores, err := m.Scores(ctx, segments, queries)
	if err != nil {
		return nil, err
	}
	return matchScores(scores, m.MatchThreshold()), nil
}

// Scores implements [SemanticScorer]: scores in [0, 1]. It fails only when
// ctx is done.
func (m LexicalMatcher) Scores(ctx context.Context, segments []string, queries []string) ([][]float64, error) {
	return scoreAll(ctx, segments, queries, newLexVector, lexVector.similarity)
}

// MatchThreshold implements [SemanticScorer]: Threshold, or
// DefaultLexicalThreshold when it is 0.
func (m LexicalMatcher) MatchThreshold() float64 {
	if m.Threshold <= 0 {
		return DefaultLexicalThreshold
	}
	return m.Threshold
}

// RecallThreshold is the threshold of the "high" sensitivity of a Semantic
// trigger: LexicalRecallThreshold, or MatchThreshold when that is lower, so
// that a high sensitivity never matches less than the standard one.
func (m LexicalMatcher) RecallThreshold() float64 {
	return min(LexicalRecallThreshold, m.MatchThreshold())
}

// Similarity returns the score of a against b as Scores computes it.
func (m LexicalMatcher) Similarity(a, b string) float64 {
	return newLexVector(a).similarity(newLexVector(b))
}

// lexVector is a text as LexicalMatcher compares it: its set of terms
// (concepts and stems) and the character trigrams of its words.
type lexVector struct {
	terms map[string]float64 // term: weight
	norm  float64            // of terms
	grams ngramVector
}

func newLexVector(s string) lexVector {
	v := lexVector{terms: map[string]float64{}}
	words := lexicalWords(s)
	for _, w := range words {
		t, weight := lexicalTerm(w)
		v.terms[t] = weight
	}
	for _, w := range v.terms {
		v.norm += w * w
	}
	v.norm = math.Sqrt(v.norm)
	v.grams = newNGramVector(strings.Join(words, " "), DefaultNGram)
	return v
}

func (v lexVector) similarity(w lexVector) float64 {
	if v.norm == 0 || w.norm == 0 {
		return 0
	}
	a, b := v.terms, w.terms
	if len(b) < len(a) {
		a, b = b, a
	}
	dot := 0.0
	for t, x := range a {
		dot += x * b[t]
	}
	return lexicalTermWeight*dot/(v.norm*w.norm) + (1-lexicalTermWeight)*v.grams.cosine(w.grams)
}

// lexicalWords returns the normalised words of s that are not stop words.
func lexicalWords(s string) []string {
	var words []string
	var b strings.Builder
	flush := func() {
		if b.Len() == 0 {
			return
		}
		w := b.String()
		b.Reset()
		if utf8.RuneCountInString(w) < 2 {
			return
		}
		if _, stop := lexicon().stop[w]; !stop {
			words = append(words, w)
		}
	}
	for _, r := range norm.NFKD.String(s) {
		switch {
		case unicode.Is(unicode.Mn, r):
			// An accent, dropped.
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			writeFolded(&b, r)
		default:
			flush()
		}
	}
	flush()
	return words
}

// writeFolded writes the letter or digit r lowercased, with ß, æ and œ
// spelt out.
func writeFolded(b *strings.Builder, r rune) {
	switch r = unicode.ToLower(r); r {
	case 'ß':
		b.WriteString("ss")
	case 'æ':
		b.WriteString("ae")
	case 'œ':
		b.WriteString("oe")
	default:
		b.WriteRune(r)
	}
}

// Weights of the terms of a LexicalMatcher vector.
const (
	// conceptWeight is that of a concept of the table: the subject of an
	// instruction.
	conceptWeight = 2.0
	// entityWeight is that of a concept of the table naming who or what
	// (customers, employees, companies, products), present in sensitive and
	// everyday sentences alike.
	entityWeight = 0.5
	// stemWeight is that of any other word.
	stemWeight = 1.0
)

// lexicalTerm returns the term of a normalised word and its weight: its
// concept when the table has its stem, else its stem.
func lexicalTerm(w string) (string, float64) {
	st := stem(w)
	if c, ok := lexicon().concepts[st]; ok {
		if entityConcepts[c] {
			return c, entityWeight
		}
		return c, conceptWeight
	}
	return st, stemWeight
}

// entityConcepts are the concepts weighted entityWeight.
var entityConcepts = map[string]bool{"#employee": true, "#customer": true, "#company": true, "#product": true}

// suffixes are the endings stem strips, longest first within a language's
// forms: English, German, French and Spanish plurals, verb and noun endings.
// Each is replaced by its second string.
var suffixes = [][2]string{
	{"aciones", ""}, {"ations", ""}, {"ements", ""}, {"ciones", ""},
	{"ungen", ""}, {"ation", ""}, {"ement", ""}, {"ments", ""}, {"ition", ""}, {"acion", ""},
	{"cion", ""}, {"ings", ""}, {"ment", ""}, {"ions", ""}, {"ness", ""}, {"euse", ""}, {"eurs", ""},
	{"ing", ""}, {"ion", ""}, {"ers", ""}, {"ern", ""}, {"ung", ""}, {"eur", ""}, {"ies", "i"}, {"ied", "i"},
	{"es", ""}, {"ed", ""}, {"er", ""}, {"en", ""}, {"os", ""}, {"as", ""}, {"ar", ""}, {"ir", ""}, {"ly", ""},
	{"e", ""}, {"s", ""}, {"o", ""}, {"a", ""}, {"n", ""}, {"y", "i"},
}

// minStem is the fewest runes stem leaves.
const minStem = 4

// stem strips a final s (a plural), then up to twice the first of suffixes
// that the word ends with and that leaves at least minStem runes, so that
// "acquisitions" and "acquisition", "employees" and "employee" end alike. It
// is no linguistic stemmer: it only has to give the forms of a word one stem,
// and it is applied alike to queries and segments.
func stem(w string) string {
	n := utf8.RuneCountInString(w)
	if n > minStem && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") {
		w, n = w[:len(w)-1], n-1
	}
	for range 2 {
		if n <= minStem {
			break
		}
		for _, s := range suffixes {
			if strings.HasSuffix(w, s[0]) && n-len(s[0])+len(s[1]) >= minStem {
				w, n = w[:len(w)-len(s[0])]+s[1], n-len(s[0])+len(s[1])
				break
			}
		}
	}
	return w
}

// lexiconTables are the stop words (normalised) and the concept of each stem
// of the policy vocabulary.
type lexiconTables struct {
	stop     map[string]struct{}
	concepts map[string]string
}

// lexicon builds the tables from stopWords and conceptWords, normalised and
// stemmed as the texts are, once.
var lexicon = sync.OnceValue(func() lexiconTables {
	t := lexiconTables{stop: map[string]struct{}{}, concepts: map[string]string{}}
	for _, line := range stopWords {
		for _, w := range strings.Fields(line) {
			for _, n := range normaliseWords(w) {
				t.stop[n] = struct{}{}
			}
		}
	}
	for _, group := range conceptWords {
		words := strings.Fields(group)
		concept := "#" + words[0]
		for _, w := range words {
			for _, n := range normaliseWords(w) {
				if _, taken := t.concepts[stem(n)]; !taken {
					t.concepts[stem(n)] = concept
				}
			}
		}
	}
	return t
})

// normaliseWords normalises s as lexicalWords does, without the stop words
// (which are not built yet when the tables are).
func normaliseWords(s string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(norm.NFKD.String(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.Is(unicode.Mn, r)
	}) {
		var b strings.Builder
		for _, r := range f {
			if !unicode.Is(unicode.Mn, r) {
				writeFolded(&b, r)
			}
		}
		out = append(out, b.String())
	}
	return out
}

// stopWords are the function words of English, German, French and Spanish
// (and a few fillers of requests), which say nothing about a subject.
var stopWords = []string{
	// English
	`a an the and or but nor of to in on at for with by from as into onto over under about above below between
	is are was were be been being am do does did done doing have has had having will would shall should can could
	may might must this that these those it its it's we our ours us you your yours they their theirs them he him
	his she her hers i me my mine what which who whom whose when where why how there here also just only very
	so if then than too up out more most other some any all each both few such own same again further once
	now not no yes let get got make made please hi hello thanks thank dear regards via per`,
	// German
	`der die das den dem des ein eine einer eines einem einen und oder aber sondern nicht kein keine keinen
	ist sind war waren wird werden wurde wurden sein bin bist seid hat haben hatte hatten ich du er sie es wir
	ihr mich mir dich dir uns euch mein meine meinen dein deine unser unsere ihre ihren seine seinen zu zum
	zur im in am an auf aus bei mit nach von vor fur uber unter um durch als wie wenn dass ob auch noch schon
	nur so da hier dort was wer wo diese dieser dieses diesen jene man sich bitte doch ja nein hallo danke`,
	// French
	`le la les un une des du de et ou mais ne pas non est sont etait etaient etre avoir ont ai as avons avez
	je tu il elle nous vous ils elles on me te se mon ma mes ton ta tes son sa ses notre nos votre vos leur
	leurs ce cet cette ces qui que quoi dont dans en sur sous pour par avec sans au aux comme si plus tres
	aussi deja oui bonjour merci`,
	// Spanish
	`el los las lo unos unas pero ni es son era eran ser estar esta estan fue han he hay yo ella
	nosotros vosotros ellos ellas mi mis tus su sus nuestro nuestra nuestros del al con para sin sobre
	entre quien como cuando donde este estos estas ese esa eso muy mas tambien ya le les nos hola gracias`,
}

// conceptWords are the policy vocabulary LexicalMatcher knows as concepts:
// each line one concept (named by its first word), in English, German,
// French and Spanish. They are the general words of data-protection
// instructions and of the requests they are about, not the words of any one
// instruction; a word in two lines belongs to the first.
var conceptWords = []string{
	`acquisition acquire acquiring acquired buy buying bought purchase purchasing takeover merger merge buyout
	ubernahme ubernehmen fusion kauf kaufen aufkauf erwerb erwerben firmenkauf rachat racheter acquerir achat
	acheter rachete adquisicion adquirir compra comprar fusionar absorber`,
	`confidential secret secrets unannounced undisclosed unreleased unpublished nonpublic classified
	vertraulich geheim geheime unveroffentlicht confidentiel confidentielle confidencial secreto secreta reservado`,
	`announce announced announcement publish published disclose disclosed disclosure reveal revealed leak leaked
	ankundigen ankundigung bekanntgeben veroffentlichen annoncer annonce publier divulguer reveler anunciar
	anuncio publicar revelar divulgar`,
	`salary salaries wage wages compensation bonus payroll remuneration paycheck paid pay raise
	gehalt gehalter lohn lohne vergutung bezahlung salaire salaires remuneration paie salario salarios sueldo
	sueldos nomina`,
	`employee employees staff worker workers colleague colleagues coworker personnel mitarbeiter mitarbeiterin
	angestellte angestellter kollege kollegin belegschaft employe employes salarie salaries collegue empleado
	empleados trabajador trabajadores colega plantilla`,
	`health medical diagnosis diagnosed illness sick sickness disease patient treatment therapy cancer
	pregnancy pregnant disability hospital doctor gesundheit medizinisch krank krankheit diagnose behandlung
	krankmeldung krankenhaus arzt sante medical medicale malade maladie diagnostic traitement medecin hopital
	salud medico medica enfermedad enfermo diagnostico tratamiento hospital`,
	`password passwords passphrase passcode credential credentials login passwort kennwort zugangsdaten
	anmeldedaten identifiant identifiants motdepasse contrasena credenciales`,
	`token tokens apikey key keys secretkey schlussel cle cles clave claves`,
	`customer customers client clients clientele consumer consumers kunde kunden kundin cliente clientes`,
	`address addresses phone telephone email mobile birthday birthdate adresse anschrift telefon handynummer
	geburtsdatum courriel direccion domicilio telefono correo`,
	`passport identity ssn license ausweis reisepass personalausweis passeport identite pasaporte identidad dni`,
	`source code codebase repository repo software algorithm quellcode programmcode codigo logiciel`,
	`lawsuit lawsuits litigation sue sued suing dispute court trial lawyer attorney klage verklagen
	rechtsstreit gericht prozess anwalt proces litige tribunal poursuite avocat poursuivre demanda litigio
	pleito juicio abogado demandar`,
	`layoff layoffs redundancy redundancies dismissal dismiss downsizing restructuring fired firing entlassung
	entlassungen entlassen kundigung stellenabbau umstrukturierung licenciement licenciements licencier
	restructuration despido despidos despedir reestructuracion recorte recortes`,
	`company companies firm business corporation competitor startup unternehmen firma konzern wettbewerber
	entreprise societe concurrent empresa compania competidor`,
	`revenue earnings profit profits loss results quarterly quarter forecast figures turnover umsatz gewinn
	verlust quartal quartalszahlen ergebnis ergebnisse benefice perte trimestre resultats ingresos beneficio
	perdida trimestrales resultados cifras`,
	`bank iban account card credit debit konto karte kreditkarte bankverbindung compte carte bancaire cuenta
	tarjeta bancaria`,
	`vulnerability vulnerabilities exploit breach flaw weakness hack attack unpatched schwachstelle
	sicherheitslucke angriff faille vulnerabilite breche attaque vulnerabilidad brecha ataque`,
	`contract contracts agreement deal negotiation supplier suppliers vendor vertrag vertrage vereinbarung
	lieferant contrat accord fournisseur contrato acuerdo proveedor`,
	`price prices pricing discount discounts preis preise rabatt prix remise tarif precio precios descuento`,
	`performance evaluation appraisal rating warning disciplinary leistungsbeurteilung beurteilung abmahnung
	avertissement evaluacion desempeno amonestacion`,
	`product products feature launch roadmap release produkt produkte funktion markteinfuhrung produit lancement
	fonctionnalite producto lanzamiento`,
	`criminal conviction convicted police arrest arrested offence offense vorstrafe vorstrafen strafregister
	polizei verurteilt casier condamnation judiciaire antecedentes penales condena`,
	`investigation whistleblower complaint inquiry probe untersuchung hinweisgeber beschwerde enquete lanceur
	plainte investigacion denunciante queja`,
	`recipe formula formulation ingredient ingredients rezept rezeptur formel recette formule receta formula`,
	`child children minor minors kid kids pupil pupils kind kinder schuler minderjahrig enfant enfants eleve
	mineur nino ninos menor menores alumno alumnos`,
}
