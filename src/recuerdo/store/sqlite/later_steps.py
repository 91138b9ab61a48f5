"""The SQLite migration steps written in modules of their own, in order (after ``m017``)."""

from __future__ import annotations

from ..audit_filters import m037_unescaped_audit_filters
from ..audit_found import m051_audit_found_index
from ..audit_run_words import m050_audit_run_words
from ..audit_sweep import m035_audit_sweep
from ..audit_words import m034_audit_words
from ..base import Tx
from ..cascade_indexes import m033_cascade_indexes
from ..document_import_keys import m039_document_import_keys
from ..entity_names import m038_nfc_entity_names
from ..journal_moves import m047_journal_move_keys
from ..note_projects import m046_note_projects
from ..released_hashes import m032_released_hashes
from ..send_keys import m042_send_keys
from ..tallies import m031_item_tallies
from .chunk_spans import m021_chunk_spans, m023_missed_vectors
from .compact_schema import m018_compact_store
from .entry_scopes_schema import m028_entry_scopes
from .folded_trigrams_schema import m029_folded_trigrams
from .keys_schema import m022_binary_keys
from .newest_first_schema import m024_trigrams_newest_first
from .revisions_schema import m019_revision_deltas
from .stale_words import m036_stale_words
from .superseded_schema import m020_superseded_chunks
from .tag_categories_schema import m026_tag_categories
from .titles_schema import m025_note_titles
from .unmarked_words import m049_unmarked_words
from .unspaced_words import m045_unspaced_words
from .width_words import m048_width_forms


def m027_chunk_tokens(tx: Tx) -> None:
    """PostgreSQL's step (``store/postgres/word_statistics.py``): FTS5 keeps each row's length
    itself. Every backend lists the same steps, so a backup of either restores into the
    other."""


def m030_folded_entries(tx: Tx) -> None:
    """PostgreSQL's step (``store/postgres/folds.py``): here the entries whose folding the
    trigram tokenizer cannot do keep their folded stretches since m029, and the rows above
    the index's mark are folded by Python as they are read."""


def m044_folded_words(tx: Tx) -> None:
    """PostgreSQL's step (``store/postgres/word_folds.py``): FTS5's tokenizer already reads
    words without their Latin accents, in either Unicode form."""


LATER_STEPS = (
    *(m018_compact_store, m019_revision_deltas, m020_superseded_chunks),
    *(m021_chunk_spans, m022_binary_keys, m023_missed_vectors),
    *(m024_trigrams_newest_first, m025_note_titles, m026_tag_categories),
    *(m027_chunk_tokens, m028_entry_scopes, m029_folded_trigrams),
    *(m030_folded_entries, m031_item_tallies, m032_released_hashes),
    *(m033_cascade_indexes, m034_audit_words, m035_audit_sweep),
    *(m036_stale_words, m037_unescaped_audit_filters, m038_nfc_entity_names),
    *(m039_document_import_keys, m042_send_keys, m044_folded_words),
    m045_unspaced_words,
    m046_note_projects,
    m047_journal_move_keys,
    m048_width_forms,
    m049_unmarked_words,
    m050_audit_run_words,
    m051_audit_found_index,
)
