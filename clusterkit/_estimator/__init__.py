"""The scikit-learn face: the :class:`~clusterkit.Clusterer` estimator (:mod:`.clusterer`),
its ``partial_fit`` (:mod:`.streaming`) and mixture methods (:mod:`.mixture`), lazy results of
dask fits (:mod:`.lazy`), validation at the public boundary (:mod:`.validation`), the names
users give instead of objects (:mod:`.registry`), the presets' registry (:mod:`.guide`), and
the saved-model format (:mod:`.model_file`).

Where the code lives, not an import path: users import from :mod:`clusterkit`.
"""
