"""scikit-learn estimators: PrivateLinearClassifier (`classifier`) and
RandomFourierFeatures (`features`)."""
