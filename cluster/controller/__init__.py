"""The controller: one broker elected through ZooKeeper that decides leadership."""
