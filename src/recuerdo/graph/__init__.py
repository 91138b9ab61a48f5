"""Knowledge: entities, typed attributes, temporal facts with citations, derived facts."""
