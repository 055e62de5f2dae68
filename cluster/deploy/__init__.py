"""Roll-out of the cluster onto real hosts over SSH (`kafkactl deploy`).

One Ansible YAML inventory describes the cluster for `kafkactl deploy` and
`ansible-playbook` alike (docs/deploy.md):

    ansible_inventory  Ansible's groups, hosts and variable precedence (pure)
    inventory          the typed, validated Inventory: load_inventory(path)
    config_keys        which broker_config / zookeeper_config keys are allowed (pure)
    media_probe        run on a host (stdlib only): a path's disks and media
    media              the probe's answers and each log dir's media (pure)
    wheelhouse         the wheels of the core install a host gets: build_wheelhouse, load_wheelhouse
"""
