//! The search index's queries: `ILIKE` search in search-conversations' order, BM25
//! keyword ranking (alone or with each row's neighbours), and key lookups — all over
//! the live rows of an opened [`Index`].

use super::segment::{order, Segment, HAS_QUESTION, NOT_INJECTED};
use super::Index;
use crate::cancel::Cancel;
use crate::search::postings::{self, Stats};
use crate::search::scan::{self, Corrupt, Pattern};
use crate::stores::conversations::project::{Project, RowMask};
use crate::stores::segments::Live;

/// What one search asks for.
#[derive(Debug, Clone, Copy)]
pub struct Query<'a> {
    /// `Some(term)`: `content ILIKE '%' || term || '%'`; `None`: the questions mode
    /// (`role = 'user' AND NOT is_injected AND has_question = 1`).
    pub term: Option<&'a str>,
    /// `role = ?` (ignored in the questions mode).
    pub role: Option<&'a str>,
    /// With `role = 'user'`, also `NOT is_injected`.
    pub exclude_injected: bool,
    /// Maximum rows.
    pub limit: usize,
    /// The call's stop signal: once stopped, the search returns early with fewer rows
    /// (the host then discards them).
    pub stop: &'a Cancel,
}

/// One row of a result, with the columns search-conversations shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    /// `created`, µs since the epoch.
    pub created_us: i64,
    /// `source`.
    pub source: String,
    /// `role`.
    pub role: String,
    /// `conversation_id`.
    pub conversation_id: String,
    /// `message_id`.
    pub message_id: String,
    /// `project` (`None`: NULL, or an index segment without the project column).
    pub project: Option<String>,
    /// First [`PREVIEW_CHARS`](super::segment::PREVIEW_CHARS) characters of `content`.
    pub preview: String,
}

impl Index {
    /// Total live rows.
    pub fn rows(&self) -> u64 {
        self.manifest().stamp.rows
    }

    /// The first `q.limit` rows matching `q`, in search order — the rows DuckDB's
    /// `… ORDER BY created DESC, source, conversation_id, message_id LIMIT ?` returns.
    ///
    /// # Errors
    /// [`Corrupt`] when a segment is damaged.
    pub fn search(&self, q: &Query<'_>) -> Result<Vec<Hit>, Corrupt> {
        self.search_in(q, None)
    }

    /// True when every segment holds each row's `project` (format version 3): only
    /// then can [`Index::search_in`] and [`Index::keyword_in_context_in`] apply a
    /// [`Project`], and do hits carry their project.
    pub fn has_projects(&self) -> bool {
        self.segments().iter().all(|l| l.seg.has_projects())
    }

    /// [`Index::search`] of the rows whose `project` matches `project` too (`None`:
    /// every row), as `… AND project ILIKE ? ESCAPE '\'` ([`Project::SQL`]).
    ///
    /// # Errors
    /// [`Corrupt`] when a segment is damaged, or has no project column while
    /// `project` is given ([`Index::has_projects`]).
    pub fn search_in(&self, q: &Query<'_>, project: Option<&Project>) -> Result<Vec<Hit>, Corrupt> {
        let pattern = q.term.map(Pattern::new);
        // (segment, row) candidates, kept sorted and cut to `limit`.
        let mut best: Vec<(usize, usize)> = Vec::new();
        for (si, live) in self.segments().iter().enumerate() {
            let seg = &live.seg;
            if seg.is_empty() || q.stop.is_stopped() {
                continue;
            }
            if best.len() >= q.limit {
                // Nothing in this segment can beat the current last row.
                let (ls, lr) = best[best.len() - 1];
                let worst = self.segments()[ls].seg.key(lr)?;
                if order(worst, seg.key(0)?) == std::cmp::Ordering::Less {
                    continue;
                }
            }
            let mask = match project {
                Some(p) => Some(p.mask(seg)?.ok_or(Corrupt)?),
                None => None,
            };
            let rows = match &pattern {
                Some(p) => find_in(live, p, q, mask.as_ref())?,
                None => questions_in(live, q.limit, mask.as_ref())?,
            };
            if rows.is_empty() {
                continue;
            }
            best.extend(rows.into_iter().map(|r| (si, r)));
            let mut keyed = Vec::with_capacity(best.len());
            for &(s, r) in &best {
                keyed.push(((s, r), self.segments()[s].seg.key(r)?));
            }
            keyed.sort_by(|a, b| order(a.1, b.1));
            keyed.truncate(q.limit);
            best = keyed.into_iter().map(|(sr, _)| sr).collect();
        }
        best.into_iter().map(|(s, r)| self.hit(s, r)).collect()
    }
}

/// What one keyword (BM25) search asks for: every filter applies before ranking, so
/// the answer is the best `limit` rows that pass them.
#[derive(Debug, Clone, Copy)]
pub struct KeywordQuery<'a> {
    /// Terms as [`crate::search::words::query_terms`] gives them (folded, chosen by
    /// `is_term`, stemmed): the postings' own terms; each is scored once.
    pub terms: &'a [String],
    /// `role = ?`.
    pub role: Option<&'a str>,
    /// With `role = 'user'`, also `NOT is_injected`.
    pub exclude_injected: bool,
    /// `source = ?`.
    pub source: Option<&'a str>,
    /// `conversation_id = ?`.
    pub conversation_id: Option<&'a str>,
    /// `created >= ?` (µs).
    pub since_us: Option<i64>,
    /// `created < ?` (µs).
    pub until_us: Option<i64>,
    /// Maximum rows.
    pub limit: usize,
    /// The call's stop signal: checked between segments.
    pub stop: &'a Cancel,
}

impl<'a> KeywordQuery<'a> {
    /// The best `limit` rows for `terms` in every conversation, any role, the harness's
    /// injected user messages left out (what semantic-search's keyword leg asks with no
    /// filter); set the fields to filter further.
    pub fn new(terms: &'a [String], limit: usize, stop: &'a Cancel) -> Self {
        Self {
            terms,
            role: None,
            exclude_injected: true,
            source: None,
            conversation_id: None,
            since_us: None,
            until_us: None,
            limit,
            stop,
        }
    }
}

/// How [`Index::keyword_in_context`] scores a row with the messages around it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Neighbourhood {
    /// Messages on each side of a row (same conversation) that count with it.
    pub window: usize,
    /// How their words count ([`postings::Spread`]).
    pub spread: postings::Spread,
}

/// Rows looked at on each side of a row for its [`Neighbourhood`]: past this many rows
/// of other conversations (interleaved in time), a neighbour is not searched further.
pub const NEIGHBOUR_GAP: usize = 64;

/// One row found by [`Index::keyword_in_context`].
#[derive(Debug, Clone, PartialEq)]
pub struct KeywordHit {
    /// The ranking score: BM25 of the row with its neighbours (> 0).
    pub score: f64,
    /// The row's own BM25 (0 when only its neighbours hold the words).
    pub own: f64,
    /// The row.
    pub hit: Hit,
}

impl Index {
    /// True when every segment holds stemmed BM25 postings (version 4 files); an index
    /// with older segments answers [`Index::keyword`] with `None` until the next ingest
    /// rewrites them.
    pub fn has_postings(&self) -> bool {
        self.segments().iter().all(|l| l.seg.postings().is_some())
    }

    /// The best `q.limit` live rows for `q.terms` by BM25 ([`postings`]): `(score,
    /// hit)`, best first, ties in search order (newest first). Statistics (`N`, `df`,
    /// mean length) are those of every segment, masked rows included until a merge
    /// drops them, as Lucene counts deleted documents. `None` when a segment has no
    /// postings ([`Index::has_postings`]).
    ///
    /// # Errors
    /// [`Corrupt`] when a segment is damaged.
    pub fn keyword(&self, q: &KeywordQuery<'_>) -> Result<Option<Vec<(f64, Hit)>>, Corrupt> {
        Ok(self
            .ranked(q, None, None)?
            .map(|hits| hits.into_iter().map(|k| (k.score, k.hit)).collect()))
    }

    /// As [`Index::keyword`], each row scored with the messages around it
    /// ([`Neighbourhood`]): up to `window` live, non-injected rows of the same
    /// conversation on each side, nearest in time first (rows are in time order inside
    /// a segment, and a conversation's live rows all sit in one segment). A message
    /// that holds none of the words but answers one that does ("Yes, twice last
    /// summer!") is found this way. Filters apply to the returned row, not to its
    /// neighbours.
    ///
    /// # Errors
    /// [`Corrupt`] when a segment is damaged.
    pub fn keyword_in_context(
        &self,
        q: &KeywordQuery<'_>,
        around: Neighbourhood,
    ) -> Result<Option<Vec<KeywordHit>>, Corrupt> {
        self.ranked(q, Some(around), None)
    }

    /// [`Index::keyword_in_context`] over the rows whose `project` matches `project`
    /// (applied before ranking, as every filter; neighbours count whatever their
    /// project). `None` also when a segment has no project column.
    ///
    /// # Errors
    /// [`Corrupt`] when a segment is damaged.
    pub fn keyword_in_context_in(
        &self,
        q: &KeywordQuery<'_>,
        around: Option<Neighbourhood>,
        project: Option<&Project>,
    ) -> Result<Option<Vec<KeywordHit>>, Corrupt> {
        if project.is_some() && !self.has_projects() {
            return Ok(None);
        }
        self.ranked(q, around, project)
    }

    fn ranked(
        &self,
        q: &KeywordQuery<'_>,
        around: Option<Neighbourhood>,
        project: Option<&Project>,
    ) -> Result<Option<Vec<KeywordHit>>, Corrupt> {
        let mut all = Vec::with_capacity(self.segments().len());
        for live in self.segments() {
            match live.seg.postings() {
                Some(p) => all.push(p),
                None => return Ok(None),
            }
        }
        let stats = Stats {
            rows: all.iter().map(|p| p.rows() as u64).sum(),
            total_length: all.iter().map(|p| p.total_length).sum(),
        };
        let avg = stats.avg_length();
        // Each term's list in each segment (looked up once), then its idf over all.
        let mut lists: Vec<Vec<(postings::List<'_>, f64)>> = vec![Vec::new(); all.len()];
        for t in q.terms {
            let mut df = 0u64;
            let mut found = Vec::new();
            for (si, p) in all.iter().enumerate() {
                if let Some(l) = p.list(t)? {
                    df += u64::from(l.df);
                    found.push((si, l));
                }
            }
            let idf = postings::idf(stats.rows, df);
            for (si, l) in found {
                lists[si].push((l, idf));
            }
        }
        // (score, own score, segment, row), cut to `limit` after each segment.
        let mut best: Vec<(f64, f64, usize, usize)> = Vec::new();
        for (si, (live, p)) in self.segments().iter().zip(&all).enumerate() {
            if q.stop.is_stopped() {
                break;
            }
            if lists[si].is_empty() {
                continue;
            }
            let seg = &live.seg;
            let role = match q.role {
                Some(r) => match seg.role_id(r)? {
                    Some(id) => Some(id),
                    None => continue,
                },
                None => None,
            };
            let source = match q.source {
                Some(s) => match seg.source_id(s)? {
                    Some(id) => Some(id),
                    None => continue,
                },
                None => None,
            };
            let conversation = match q.conversation_id {
                Some(c) => match seg.conversation_id_of(c)? {
                    Some(id) => Some(id),
                    None => continue,
                },
                None => None,
            };
            let mask = match project {
                Some(p) => Some(p.mask(seg)?.ok_or(Corrupt)?),
                None => None,
            };
            let projects = seg.project_ids();
            let need_typed = q.exclude_injected && q.role == Some("user");
            let (roles, flags, sources, convs, created) = (
                seg.role_ids(),
                seg.flags(),
                seg.source_ids(),
                seg.conversation_ids(),
                seg.created(),
            );
            let accept = |row: usize| {
                !live.is_dead(row)
                    && role.is_none_or(|id| roles.get(row) == Some(&id))
                    && (!need_typed || flags.get(row).is_some_and(|f| f & NOT_INJECTED != 0))
                    && source.is_none_or(|id| sources.get(row) == Some(&id))
                    && conversation.is_none_or(|id| convs.get(row) == Some(&id))
                    && q.since_us
                        .is_none_or(|s| created.get(row).is_some_and(|&c| c >= s))
                    && q.until_us
                        .is_none_or(|u| created.get(row).is_some_and(|&c| c < u))
                    && mask.as_ref().is_none_or(|m| m.keeps(projects.get(row)))
            };
            match around {
                None => {
                    let rows = postings::top_rows(p, &lists[si], avg, q.limit, accept)?;
                    best.extend(rows.into_iter().map(|(score, r)| (score, score, si, r)));
                }
                Some(n) => {
                    let neighbours = |row: usize, out: &mut Vec<usize>| {
                        typed_neighbours(
                            live,
                            (convs, sources, flags),
                            row,
                            n.window,
                            [1, -1],
                            out,
                        );
                    };
                    let rows = postings::top_rows_in_context(
                        p, &lists[si], avg, q.limit, n.spread, neighbours, accept,
                    )?;
                    best.extend(rows.into_iter().map(|c| (c.score, c.own, si, c.row)));
                }
            }
            let mut keyed = Vec::with_capacity(best.len());
            for &(score, own, s, r) in &best {
                keyed.push((score, (own, s, r), self.segments()[s].seg.key(r)?));
            }
            keyed.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| order(a.2, b.2)));
            keyed.truncate(q.limit);
            best = keyed
                .into_iter()
                .map(|(score, (own, s, r), _)| (score, own, s, r))
                .collect();
        }
        best.into_iter()
            .map(|(score, own, s, r)| {
                Ok(KeywordHit {
                    score,
                    own,
                    hit: self.hit(s, r)?,
                })
            })
            .collect::<Result<Vec<_>, Corrupt>>()
            .map(Some)
    }

    fn hit(&self, s: usize, r: usize) -> Result<Hit, Corrupt> {
        let seg = &self.segments()[s].seg;
        Ok(Hit {
            created_us: *seg.created().get(r).ok_or(Corrupt)?,
            source: seg.source(r)?.to_owned(),
            role: seg.role(r)?.to_owned(),
            conversation_id: seg.conversation_id(r)?.to_owned(),
            message_id: seg.message_id(r)?.to_owned(),
            project: seg.project(r)?.map(str::to_owned),
            preview: seg.preview(r)?,
        })
    }

    /// The live row with key (`created_us`, `source`, `conversation_id`,
    /// `message_id`), found by binary search in each segment (rows are in key order):
    /// its [`Hit`] and its folded text (`content` lowercased as DuckDB does).
    /// `None` when no live row has that key.
    ///
    /// # Errors
    /// [`Corrupt`] when a segment is damaged.
    pub fn lookup(
        &self,
        created_us: i64,
        source: &str,
        conversation_id: &str,
        message_id: &str,
    ) -> Result<Option<(Hit, String)>, Corrupt> {
        let key = (created_us, source, conversation_id, message_id);
        for live in self.segments() {
            let seg = &live.seg;
            let (mut lo, mut hi) = (0, seg.len());
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if order(seg.key(mid)?, key) == std::cmp::Ordering::Less {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            if lo < seg.len() && seg.key(lo)? == key && !live.is_dead(lo) {
                let text = String::from_utf8_lossy(seg.texts().row(lo)?).into_owned();
                let hit = Hit {
                    created_us,
                    source: source.to_owned(),
                    role: seg.role(lo)?.to_owned(),
                    conversation_id: conversation_id.to_owned(),
                    message_id: message_id.to_owned(),
                    project: seg.project(lo)?.map(str::to_owned),
                    preview: seg.preview(lo)?,
                };
                return Ok(Some((hit, text)));
            }
        }
        Ok(None)
    }
}

impl Index {
    /// The live, non-injected rows of the same conversation (and source) around the
    /// row with key (`created_us`, `source`, `conversation_id`, `message_id`): up to
    /// `window` on each side, nearest first on each side (before, then after), looked for
    /// over at most [`NEIGHBOUR_GAP`] rows each way — the neighbours
    /// [`Index::keyword_in_context`] scores a row with. Empty when no live row has that
    /// key.
    ///
    /// # Errors
    /// [`Corrupt`] when a segment is damaged.
    pub fn around(
        &self,
        created_us: i64,
        source: &str,
        conversation_id: &str,
        message_id: &str,
        window: usize,
    ) -> Result<Vec<Hit>, Corrupt> {
        let key = (created_us, source, conversation_id, message_id);
        for (si, live) in self.segments().iter().enumerate() {
            let seg = &live.seg;
            let (mut lo, mut hi) = (0, seg.len());
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if order(seg.key(mid)?, key) == std::cmp::Ordering::Less {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            if lo >= seg.len() || seg.key(lo)? != key || live.is_dead(lo) {
                continue;
            }
            let mut rows = Vec::new();
            if window > 0 {
                let columns = (seg.conversation_ids(), seg.source_ids(), seg.flags());
                typed_neighbours(live, columns, lo, window, [-1, 1], &mut rows);
            }
            return rows.into_iter().map(|j| self.hit(si, j)).collect();
        }
        Ok(Vec::new())
    }
}

/// The rows [`Index::keyword_in_context`] scores row `row` of `live` with: live, typed
/// (not injected) rows of its conversation and source (`columns`: the segment's
/// conversation ids, source ids and flags), nearest first, up to `window` on each side
/// (0: every such row), looked for over at most [`NEIGHBOUR_GAP`] rows each way, the
/// sides in the order of `steps` (1: after, -1: before); pushed onto `out`.
fn typed_neighbours(
    live: &Live<Segment>,
    (convs, sources, flags): (&[u32], &[u16], &[u8]),
    row: usize,
    window: usize,
    steps: [isize; 2],
    out: &mut Vec<usize>,
) {
    let (Some(&c), Some(&s)) = (convs.get(row), sources.get(row)) else {
        return;
    };
    for step in steps {
        let (mut j, mut found) = (row, 0);
        for _ in 0..NEIGHBOUR_GAP {
            let Some(next) = j.checked_add_signed(step) else {
                break;
            };
            j = next;
            if j >= convs.len() {
                break;
            }
            if convs[j] == c
                && sources.get(j) == Some(&s)
                && !live.is_dead(j)
                && flags.get(j).is_some_and(|f| f & NOT_INJECTED != 0)
            {
                out.push(j);
                found += 1;
                if found == window {
                    break;
                }
            }
        }
    }
}

/// Rows of one segment matching an `ILIKE` query, in order, at most `q.limit`.
fn find_in(
    live: &Live<Segment>,
    pattern: &Pattern,
    q: &Query<'_>,
    project: Option<&RowMask>,
) -> Result<Vec<usize>, Corrupt> {
    let seg = &live.seg;
    let role = match q.role {
        Some(r) => match seg.role_id(r)? {
            Some(id) => Some(id),
            None => return Ok(Vec::new()),
        },
        None => None,
    };
    let need_typed = q.exclude_injected && q.role == Some("user");
    let (roles, flags, projects) = (seg.role_ids(), seg.flags(), seg.project_ids());
    let mut accept = |row: usize| {
        !live.is_dead(row)
            && role.is_none_or(|id| roles.get(row) == Some(&id))
            && (!need_typed || flags.get(row).is_some_and(|f| f & NOT_INJECTED != 0))
            && project.is_none_or(|m| m.keeps(projects.get(row)))
    };
    if let Some(rows) = find_by_postings(live, pattern, &mut accept, q)? {
        return Ok(rows);
    }
    let mut out = Vec::new();
    let filter = seg.filter();
    scan::find(
        &seg.texts(),
        Some(&filter),
        pattern,
        &mut accept,
        q.limit,
        &mut out,
        q.stop,
    )?;
    Ok(out)
}

/// A whole word of the pattern ([`Pattern::whole_words`]) held by at most this share
/// of a segment's rows sends [`find_in`] to that word's postings instead of the scan:
/// each candidate row is then tested alone (~100–200 ns, a cache miss and a `memmem`),
/// which beats the block-filtered scan (~10 GB/s over the blocks it cannot skip) while
/// the word is rarer than this.
const POSTINGS_MAX_SHARE: usize = 16;

/// [`find_in`] through postings: the rows holding the pattern's rarest indexed whole
/// word, tested in order. Sound because every row the pattern matches holds each of
/// its whole words, and a segment's postings list every indexed word of every row
/// (`search::postings::build`). `Ok(None)` when the segment has no postings, the
/// pattern no indexed whole word, or its rarest one is too common to pay.
fn find_by_postings(
    live: &Live<Segment>,
    pattern: &Pattern,
    accept: &mut dyn FnMut(usize) -> bool,
    q: &Query<'_>,
) -> Result<Option<Vec<usize>>, Corrupt> {
    let seg = &live.seg;
    let Some(p) = seg.postings() else {
        return Ok(None);
    };
    let mut rarest: Option<postings::List<'_>> = None;
    for word in pattern.whole_words() {
        if !crate::search::words::is_term(word) {
            continue;
        }
        // A row holding `word` is in its stem's list (a superset: the other words of
        // that stem are there too), so the list still bounds the rows to test.
        match p.list(&crate::search::words::stem(word))? {
            // No row holds a word every match must hold.
            None => return Ok(Some(Vec::new())),
            Some(l) if rarest.is_none_or(|r| l.df < r.df) => rarest = Some(l),
            Some(_) => {}
        }
    }
    let Some(list) = rarest.filter(|l| (l.df as usize) * POSTINGS_MAX_SHARE <= seg.len()) else {
        return Ok(None);
    };
    let texts = seg.texts();
    let mut out = Vec::new();
    let mut damaged = false;
    let mut tested = 0usize;
    list.rows_while(|row| {
        tested += 1;
        if tested.is_multiple_of(scan::STOP_CHECK_ROWS) && q.stop.is_stopped() {
            return false;
        }
        match texts.row(row) {
            Ok(text) => {
                if accept(row) && pattern.matches(text) {
                    out.push(row);
                }
            }
            Err(_) => damaged = true,
        }
        !damaged && out.len() < q.limit
    })?;
    if damaged {
        return Err(Corrupt);
    }
    Ok(Some(out))
}

/// Rows of one segment in the questions mode, in order, at most `limit`.
fn questions_in(
    live: &Live<Segment>,
    limit: usize,
    project: Option<&RowMask>,
) -> Result<Vec<usize>, Corrupt> {
    let seg = &live.seg;
    let Some(user) = seg.role_id("user")? else {
        return Ok(Vec::new());
    };
    let want = HAS_QUESTION | NOT_INJECTED;
    let (roles, flags, projects) = (seg.role_ids(), seg.flags(), seg.project_ids());
    Ok((0..seg.len())
        .filter(|&r| {
            roles.get(r) == Some(&user)
                && flags.get(r).is_some_and(|f| f & want == want)
                && !live.is_dead(r)
                && project.is_none_or(|m| m.keeps(projects.get(r)))
        })
        .take(limit)
        .collect())
}
