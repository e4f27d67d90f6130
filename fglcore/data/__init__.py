"""Datasets (:mod:`.datasets`), partitions (:mod:`.partition`), splits (:mod:`.splits`)
and the federations built from them (:mod:`.federation`)."""
