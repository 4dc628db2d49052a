#include "tools/log_explain.h"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <tuple>

#include "common/log_events.h"
#include "common/units.h"
#include "tools/cli_util.h"
#include "tools/log_history.h"

namespace wirewise::tools {
namespace {

using logev::AdaptKind;
using logev::isAdaptKind;

// The kinds after which a bucket runs something new; "alarm" and "hold" leave the incumbent in place.
bool setsDecision(const std::string& kind) {
  return isAdaptKind(kind, AdaptKind::Calibrated) || isAdaptKind(kind, AdaptKind::Commit) ||
         isAdaptKind(kind, AdaptKind::Recover) || isAdaptKind(kind, AdaptKind::Revert);
}

// The events about one bucket range (each "adapt" event speaks about exactly one), oldest first.
struct Bucket {
  std::string coll;
  uint64_t lo = 0, hi = 0;
  std::vector<const AdaptEvent*> events;
};

// What a bucket's events say, read back from the end of the log.
struct Story {
  const Bucket* bucket = nullptr;
  const AdaptEvent* set = nullptr;         // the latest event that set a decision
  const AdaptEvent* setAlarm = nullptr;    // the alarm that opened the episode `set` closed
  const AdaptEvent* since = nullptr;       // the latest event after `set`: a hold, or an alarm still probing
  const AdaptEvent* sinceAlarm = nullptr;  // the alarm that opened `since`'s episode (`since` itself if an alarm)
  const AdaptEvent* first() const { return set ? set : since; }
};

Story storyOf(const Bucket& b) {
  Story s;
  s.bucket = &b;
  const auto& ev = b.events;
  const int n = static_cast<int>(ev.size());
  int setAt = -1;
  for (int i = n - 1; i >= 0 && setAt < 0; --i)
    if (setsDecision(ev[i]->kind)) setAt = i;
  if (setAt >= 0) {
    s.set = ev[setAt];
    for (int i = setAt - 1; i >= 0 && !setsDecision(ev[i]->kind); --i)
      if (isAdaptKind(ev[i]->kind, AdaptKind::Alarm)) {
        s.setAlarm = ev[i];
        break;
      }
  }
  if (n - 1 > setAt) {
    s.since = ev[n - 1];
    for (int i = n - 1; i > setAt; --i)
      if (isAdaptKind(ev[i]->kind, AdaptKind::Alarm)) {
        s.sinceAlarm = ev[i];
        break;
      }
  }
  return s;
}

std::string capitalized(std::string s) {
  if (!s.empty()) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
  return s;
}

// Three significant figures at most, as a person reads a timing: 345, 34.5, 3.45.
std::string num3(double v) {
  const double a = std::fabs(v);
  std::string t = fmt::format("{:.{}f}", v, a >= 100 ? 0 : a >= 10 ? 1 : 2);
  if (t.find('.') != std::string::npos) {
    t.erase(t.find_last_not_of('0') + 1);  // 85.0 -> 85, 3.40 -> 3.4
    if (t.back() == '.') t.pop_back();
  }
  return t;
}

std::string statText(double v) { return fmt::format("{:g}", std::round(v * 1000) / 1000); }

// "345 µs (141 GB/s bus bandwidth)"; `brief` leaves out the words "bus bandwidth" said once already.
std::string measured(double us, const std::optional<double>& busBw, bool brief) {
  std::string t = num3(us) + " µs";
  if (busBw && *busBw > 0) t += fmt::format(" ({} GB/s{})", num3(*busBw), brief ? "" : " bus bandwidth");
  return t;
}

std::string fromTo(uint64_t lo, uint64_t hi) {
  if (hi == UINT64_MAX) return fmt::format("from {} up", bytesText(lo));
  return fmt::format("from {} to {}", bytesText(lo), bytesText(hi + 1));
}

std::string collWords(const std::string& coll) { return coll == logev::kAny ? "every collective" : coll; }

// "tree/simple on 11 channels" for the key "tree/simple/11"; a key it cannot read is printed as it is.
std::string decisionWords(const std::string& key) {
  if (key == logev::kNcclDecision) return "NCCL's own choice";
  const std::optional<logev::DecisionParts> d = logev::parseDecision(key);
  if (!d) return key;
  const std::string &algo = d->algo, &proto = d->proto;
  std::string what = algo == logev::kAny && proto == logev::kAny ? "NCCL's algorithm and protocol"
                     : algo == logev::kAny                       ? "NCCL's algorithm with " + proto
                     : proto == logev::kAny                      ? algo + " with NCCL's protocol"
                                                                 : algo + "/" + proto;
  if (d->channels == 0) return what + " on NCCL's channel count";
  return what + (d->channels == 1 ? " on 1 channel" : fmt::format(" on {} channels", d->channels));
}

std::string at(const AdaptEvent& e) { return fmt::format("at collective {} (verdict {})", e.boundary, e.index); }

// "the detector saw it 19% slower (CUSUM 0.31 over threshold 0.12)". The size of the shift comes from the
// alarm (its before/after are the baseline and the changed time); the statistic from whichever has it.
// The policy's reading of the change (latency or bandwidth), when it made one, follows: the settled one on
// the event itself is preferred over the alarm's (taken on fewer, mixed observations).
std::string detectorClause(const AdaptEvent* alarm, const AdaptEvent* e) {
  const AdaptEvent* d = alarm && alarm->hasDetector ? alarm : e && e->hasDetector ? e : nullptr;
  const std::string cusum =
      d ? fmt::format(" (CUSUM {} over threshold {})", statText(d->statistic), statText(d->threshold)) : "";
  const std::string causeText = e && !e->cause.empty() ? e->cause : alarm ? alarm->cause : e ? e->cause : "";
  const std::string cause = causeText.empty() ? "" : ": " + causeText;
  if (alarm && alarm->beforeUs && alarm->afterUs && *alarm->beforeUs > 0) {
    const double pct = (*alarm->afterUs / *alarm->beforeUs - 1) * 100;
    return fmt::format("the detector saw it {:.0f}% {}{}{}", std::fabs(pct), pct >= 0 ? "slower" : "faster", cusum,
                       cause);
  }
  if (d) return fmt::format("the detector saw it {}{}{}", d->shift.empty() ? "change" : d->shift, cusum, cause);
  return "";
}

std::string joinClauses(const std::string& first, const std::string& second) {
  if (first.empty()) return second;
  if (second.empty()) return first;
  return first + "; " + second;
}

// The clause on the event that set the bucket's decision.
std::string setClause(const Story& s) {
  const AdaptEvent& e = *s.set;
  const std::string det = detectorClause(s.setAlarm, &e);
  const bool fromNccl = e.from == logev::kNcclDecision || (!e.fromNccl.empty() && e.from == e.fromNccl);
  std::string against;
  if (e.beforeUs)
    against = fmt::format(" against {}{}", measured(*e.beforeUs, e.beforeBusBw, true),
                          fromNccl ? " before" : " with " + e.from + " before");
  const std::string after = e.afterUs ? measured(*e.afterUs, e.afterBusBw, false) : "an unrecorded time";
  std::string runnerUp;
  if (e.candidates.size() >= 2 && e.candidates[0].first == e.to)
    runnerUp = fmt::format("; the runner-up was {} at {} µs", e.candidates[1].first, num3(e.candidates[1].second));
  const std::string cands = e.candidates.empty() ? "calibration measured"
                            : e.candidates.size() == 1
                                ? "calibration measured 1 candidate:"
                                : fmt::format("calibration measured {} candidates:", e.candidates.size());
  if (isAdaptKind(e.kind, AdaptKind::Calibrated)) {
    if (e.to == logev::kNcclDecision)
      return fmt::format("{} NCCL's own choice{} was best at {}", cands,
                         e.fromNccl.empty() ? "" : " (" + e.fromNccl + ")", after);
    std::string base = e.beforeUs ? fmt::format(" against {} for NCCL's {}", measured(*e.beforeUs, e.beforeBusBw, true),
                                                e.fromNccl.empty() ? "own choice" : e.fromNccl)
                                  : "";
    return fmt::format("{} {} at {}{}{}", cands, e.to, after, base, runnerUp);
  }
  if (isAdaptKind(e.kind, AdaptKind::Commit))
    return joinClauses(det, fmt::format("probing measured {} at {}{}{}", e.to, after, against, runnerUp));
  if (isAdaptKind(e.kind, AdaptKind::Recover))
    return joinClauses(det, fmt::format("the link looks healed: probing measured the former choice {} at {}{}{}", e.to,
                                        after, against, runnerUp));
  // revert
  return joinClauses(det, fmt::format("probing measured NCCL's {} at {}{}, so wirewise handed the choice back "
                                      "to NCCL",
                                      e.fromNccl.empty() ? "own choice" : e.fromNccl, after, against));
}

// The clause on what happened after the decision was set (or, without one, on the latest event).
std::string sinceClause(const Story& s) {
  const AdaptEvent& e = *s.since;
  std::string det = detectorClause(s.sinceAlarm, &e);
  if (isAdaptKind(e.kind, AdaptKind::Hold))
    return fmt::format("{} {}re-probing found nothing clearly better, so it was kept", at(e),
                       det.empty() ? "" : det + " again and ");
  if (isAdaptKind(e.kind, AdaptKind::Alarm))
    return fmt::format("{} {}probing was still under way when the log ends", at(e), det.empty() ? "" : det + "; ");
  return fmt::format("{} a \"{}\" event said: {}", at(e), e.kind, e.reason);
}

// The sentences one bucket contributes; `prefix` names the bucket when the range has several.
std::string storyText(const Story& s, const std::string& prefix, const std::string& decision) {
  std::vector<std::string> sentences;
  if (s.set) sentences.push_back(setClause(s));
  if (s.since) sentences.push_back(sinceClause(s));
  std::string out;
  for (size_t i = 0; i < sentences.size(); ++i) {
    std::string t = i == 0 && !prefix.empty() ? prefix + ", " + sentences[i] : capitalized(sentences[i]);
    out += (out.empty() ? "" : " ") + t + ".";
  }
  if (s.set && s.set->to != decision)
    out += fmt::format(
        " The table in force does not run {}, which the latest adapt event for these sizes ({} at "
        "verdict {}) chose: the log may end before that verdict's table.",
        s.set->to, s.set->kind, s.set->index);
  return out;
}

// The decision key [lo, hi] of `coll` has throughout `table`, or "" when it is mixed.
std::string uniformKey(const std::vector<LogRange>& table, const std::string& coll, uint64_t lo, uint64_t hi) {
  std::string key;
  for (const auto& r : cover(table, coll, lo, hi)) {
    std::string k = decisionKey(r);
    if (!key.empty() && k != key) return "";
    key = k;
  }
  return key;
}

// The first of the last tables in which [lo, hi] of `coll` has decision `key` throughout: the range has been
// as it is since tables[result]. 0 when it has been so in every table.
size_t runStart(const std::vector<CommittedTable>& tables, const std::string& coll, uint64_t lo, uint64_t hi,
                const std::string& key) {
  size_t i = tables.size();
  while (i > 0 && uniformKey(tables[i - 1].ranges, coll, lo, hi) == key) --i;
  return i;
}

std::string tableWords(const CommittedTable& t) {
  if (t.coordinator) return fmt::format("the coordinator's table at verdict {} (\"{}\")", t.index, t.reason);
  return fmt::format("the table from {} (\"{}\")", t.source, t.reason);
}

std::string sinceWords(const CommittedTable& t) {
  if (t.coordinator) return fmt::format("Since collective {} (verdict {}), ", t.boundary, t.index);
  return fmt::format("Since collective {}, ", t.boundary);
}

// Splits NCCL's-own-choice stretch [lo, hi] into the parts adapt events cover and the parts they do not.
std::vector<std::pair<uint64_t, uint64_t>> splitByEvents(const std::vector<const Bucket*>& buckets, uint64_t lo,
                                                         uint64_t hi) {
  std::vector<std::pair<uint64_t, uint64_t>> covered;
  for (const Bucket* b : buckets)
    if (b->hi >= lo && b->lo <= hi) covered.push_back({std::max(b->lo, lo), std::min(b->hi, hi)});
  std::sort(covered.begin(), covered.end());
  std::vector<std::pair<uint64_t, uint64_t>> merged;
  for (const auto& c : covered) {
    if (!merged.empty() && (merged.back().second == UINT64_MAX || merged.back().second + 1 >= c.first))
      merged.back().second = std::max(merged.back().second, c.second);
    else merged.push_back(c);
  }
  std::vector<std::pair<uint64_t, uint64_t>> out;
  uint64_t next = lo;
  for (const auto& m : merged) {
    if (m.first > next) out.push_back({next, m.first - 1});
    out.push_back(m);
    if (m.second == hi) return out;
    next = m.second + 1;
  }
  out.push_back({next, hi});
  return out;
}

// Parts of [lo, hi] that no bucket with events covers, as "0 B-1 MiB, 4-8 MiB".
std::string uncoveredText(const std::vector<Story>& stories, uint64_t lo, uint64_t hi) {
  std::vector<const Bucket*> bs;
  for (const auto& s : stories) bs.push_back(s.bucket);
  std::string out;
  for (const auto& [a, b] : splitByEvents(bs, lo, hi)) {
    bool covered = std::any_of(bs.begin(), bs.end(), [&, a = a](const Bucket* x) { return x->lo <= a && a <= x->hi; });
    if (!covered) out += (out.empty() ? "" : ", ") + sizeSpan(a, b);
  }
  return out;
}

// Whether the buckets whose events name NCCL's choice cover all of [lo, hi].
bool measuredEverywhere(const std::vector<Story>& stories, uint64_t lo, uint64_t hi) {
  std::vector<const Bucket*> named;
  for (const auto& s : stories)
    if (std::any_of(s.bucket->events.begin(), s.bucket->events.end(),
                    [](const AdaptEvent* e) { return !e->fromNccl.empty(); }))
      named.push_back(s.bucket);
  auto parts = splitByEvents(named, lo, hi);
  return std::all_of(parts.begin(), parts.end(), [&](const std::pair<uint64_t, uint64_t>& p) {
    return std::any_of(named.begin(), named.end(),
                       [&](const Bucket* b) { return b->lo <= p.first && p.first <= b->hi; });
  });
}

struct Context {
  const CommSummary* comm = nullptr;
  const std::vector<CommittedTable>* tables = nullptr;
  std::vector<const Bucket*> buckets;  // of the collective at hand
};

Explanation explainStretch(const Context& cx, const std::string& coll, const LogRange& piece) {
  const CommSummary& c = *cx.comm;
  const auto& tables = *cx.tables;
  Explanation x;
  x.comm = c.id, x.coll = coll, x.minBytes = piece.minBytes, x.maxBytes = piece.maxBytes;
  x.decision = decisionKey(piece);
  const bool own = x.decision == logev::kNcclDecision;

  std::vector<Story> stories;
  for (const Bucket* b : cx.buckets)
    if (b->hi >= piece.minBytes && b->lo <= piece.maxBytes) stories.push_back(storyOf(*b));
  std::set<std::string> ncclNames, links;
  std::set<uint64_t> verdicts;
  const AdaptEvent* latestSet = nullptr;
  bool reverted = false;
  for (const auto& s : stories) {
    for (const AdaptEvent* e : s.bucket->events)
      if (!e->fromNccl.empty()) ncclNames.insert(e->fromNccl);  // the newest per bucket would do; all agree
    for (const AdaptEvent* e : {s.set, s.setAlarm, s.since, s.sinceAlarm})
      if (e) {
        verdicts.insert(e->index);
        links.insert(e->links.begin(), e->links.end());
      }
    if (s.set && (!latestSet || s.set->index > latestSet->index)) latestSet = s.set;
    if (s.set && isAdaptKind(s.set->kind, AdaptKind::Revert)) reverted = true;
  }
  if (ncclNames.size() == 1) x.nccl = *ncclNames.begin();  // where measured; the text says if not everywhere
  x.kind = latestSet ? latestSet->kind : "";
  x.verdicts.assign(verdicts.begin(), verdicts.end());
  x.links.assign(links.begin(), links.end());

  // NCCL's choice is named outright only when the events measured it for every size of the range.
  const bool everywhere = measuredEverywhere(stories, piece.minBytes, piece.maxBytes);
  std::string ncclWords = "NCCL's own choice";
  if (ncclNames.size() == 1 && everywhere) {
    ncclWords = "NCCL's " + x.nccl;
  } else if (!ncclNames.empty()) {
    std::string all;
    for (const auto& n : ncclNames) all += (all.empty() ? "" : ", ") + n;
    ncclWords = fmt::format("NCCL's own choice ({}{})", all, everywhere ? "" : " where measured");
  }

  const size_t start = runStart(tables, coll, piece.minBytes, piece.maxBytes, x.decision);
  const CommittedTable* since = start < tables.size() && !(own && start == 0) ? &tables[start] : nullptr;
  if (since) x.sinceIndex = since->coordinator ? std::optional<uint64_t>(since->index) : std::nullopt;
  if (since) x.sinceBoundary = since->boundary;

  const std::string who =
      fmt::format("communicator {} runs {} {}", c.id, collWords(coll), fromTo(piece.minBytes, piece.maxBytes));
  std::string text;
  if (!own) {
    std::string head = fmt::format("{} with {} instead of {}.", who, decisionWords(x.decision), ncclWords);
    if (since) text = sinceWords(*since) + head;
    else if (latestSet)
      text = fmt::format("Since collective {} (verdict {}), {}", latestSet->boundary, latestSet->index, head);
    else text = capitalized(head);
  } else {
    const std::string ownWords = ncclNames.size() == 1 && everywhere ? "NCCL's own choice (" + x.nccl + ")" : ncclWords;
    if (since) {
      std::string before = uniformKey(tables[start - 1].ranges, coll, piece.minBytes, piece.maxBytes);
      text = sinceWords(*since) + fmt::format("{} with {} again ({} before).", who, ownWords,
                                              before.empty() ? "several overrides" : decisionWords(before));
    } else if (reverted) {
      text = capitalized(fmt::format("{} with {} again.", who, ownWords));
    } else {
      text = capitalized(fmt::format("{} with {}; wirewise has not changed it.", who, ownWords));
    }
  }

  std::vector<const Story*> told;
  for (const auto& s : stories)
    if (s.first()) told.push_back(&s);
  for (const Story* s : told) {
    std::string prefix;
    if (told.size() > 1)
      prefix = fmt::format("For {} (verdict {})", sizeSpan(s->bucket->lo, s->bucket->hi), s->first()->index);
    text += " " + storyText(*s, prefix, x.decision);
  }
  if (told.empty() && since)
    text += fmt::format(" No adapt event covers {}: it came with {}.", own ? "the change" : "it", tableWords(*since));
  else if (!told.empty() && !own)
    if (std::string gaps = uncoveredText(stories, piece.minBytes, piece.maxBytes); !gaps.empty())
      text += fmt::format(" No adapt event covers {}.", gaps);
  if (!told.empty()) {
    std::string l;
    for (const auto& s : x.links) l += (l.empty() ? "" : ", ") + s;
    text += " Implicated links: " + (l.empty() ? std::string("none identified") : l) + ".";
  }
  x.text = std::move(text);
  return x;
}

// The stretches of `coll` to explain: every committed range, and NCCL's-own-choice stretches split where
// adapt events start or stop covering them.
std::vector<LogRange> stretchesOf(const std::vector<LogRange>& table, const std::vector<const Bucket*>& buckets,
                                  const std::string& coll) {
  std::vector<LogRange> out;
  for (const auto& p : cover(table, coll, 0, UINT64_MAX)) {
    if (decisionKey(p) != logev::kNcclDecision) {
      out.push_back(p);
      continue;
    }
    for (const auto& [lo, hi] : splitByEvents(buckets, p.minBytes, p.maxBytes))
      out.push_back({coll, std::string(logev::kAny), std::string(logev::kAny), lo, hi, 0});
  }
  return out;
}

}  // namespace

bool parseCommId(const std::string& text, uint64_t* id) {
  std::string t = text;
  if (t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) t = t.substr(2);
  if (t.empty() || t.size() > 16) return false;
  for (char ch : t)
    if (!std::isxdigit(static_cast<unsigned char>(ch))) return false;
  *id = std::strtoull(t.c_str(), nullptr, 16);
  return true;
}

std::vector<Explanation> explainLog(const LogSummary& s, const ExplainFilter& f) {
  std::vector<Explanation> out;
  for (const CommSummary& c : s.comms) {
    if (f.comm) {
      uint64_t id = 0;
      if (!parseCommId(c.id, &id) || id != *f.comm) continue;
    }
    const std::vector<CommittedTable> tables = tablesInForce(c);
    const std::vector<LogRange> last = tables.empty() ? std::vector<LogRange>{} : tables.back().ranges;

    std::vector<const AdaptEvent*> events;
    for (const auto& a : c.adapts) events.push_back(&a);
    std::stable_sort(events.begin(), events.end(), [](const AdaptEvent* a, const AdaptEvent* b) {
      return std::tie(a->index, a->order) < std::tie(b->index, b->order);
    });
    std::map<std::tuple<int, std::string, uint64_t, uint64_t>, Bucket> buckets;
    for (const AdaptEvent* e : events) {
      Bucket& b = buckets[{collOrder(e->coll), e->coll, e->minBytes, e->maxBytes}];
      b.coll = e->coll, b.lo = e->minBytes, b.hi = e->maxBytes;
      b.events.push_back(e);
    }

    std::vector<std::string> colls;
    if (!f.coll.empty()) {
      colls.push_back(f.coll);
    } else {
      std::vector<LogRange> mentioned;
      for (const auto& t : tables) mentioned.insert(mentioned.end(), t.ranges.begin(), t.ranges.end());
      for (const auto& [key, b] : buckets) mentioned.push_back({b.coll, "", "", b.lo, b.hi, 0});
      colls = collsOf(mentioned);
    }
    if (colls.empty()) {
      Explanation x;
      x.comm = c.id, x.decision = std::string(logev::kNcclDecision), x.maxBytes = UINT64_MAX;
      x.text = fmt::format(
          "Communicator {}: no table in the log overrides NCCL, and no adapt event speaks of it; "
          "NCCL's own choices stand everywhere.",
          c.id);
      out.push_back(std::move(x));
      continue;
    }
    for (const auto& coll : colls) {
      Context cx{&c, &tables, {}};
      for (const auto& [key, b] : buckets)
        if (b.coll == coll && b.lo <= b.hi) cx.buckets.push_back(&b);
      for (const auto& piece : stretchesOf(last, cx.buckets, coll)) {
        if (f.bytes && (*f.bytes < piece.minBytes || *f.bytes > piece.maxBytes)) continue;
        out.push_back(explainStretch(cx, coll, piece));
      }
    }
  }
  return out;
}

std::string explainText(const std::vector<Explanation>& e) {
  std::string out;
  for (const auto& x : e) out += (out.empty() ? "" : "\n") + x.text + "\n";
  return out;
}

nlohmann::json explainJson(const std::vector<Explanation>& e) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& x : e) {
    auto opt = [](const std::optional<uint64_t>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
    out.push_back({{"comm", x.comm},
                   {"coll", x.coll},
                   {"min_bytes", x.minBytes},
                   {"max_bytes", x.maxBytes},
                   {"decision", x.decision},
                   {"nccl", x.nccl},
                   {"since_index", opt(x.sinceIndex)},
                   {"since_boundary", opt(x.sinceBoundary)},
                   {"kind", x.kind},
                   {"verdicts", x.verdicts},
                   {"links", x.links},
                   {"text", x.text}});
  }
  return out;
}

}  // namespace wirewise::tools
