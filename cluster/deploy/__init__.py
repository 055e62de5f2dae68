"""Roll-out of the cluster onto real hosts over SSH (`kafkactl deploy`).

One Ansible YAML inventory describes the cluster for `kafkactl deploy` and
`ansible-playbook` alike (docs/deploy.md):

    ansible_inventory  Ansible's groups, hosts and variable precedence (pure)
    inventory          the typed, validated Inventory: load_inventory(path)
    config_keys        which broker_config / zookeeper_config keys are allowed (pure)
    media_probe        run on a host (stdlib only): a path's disks and media
    media              the probe's answers and each log dir's media (pure)
    layout             where everything lives on a host (install and data roots)
    render             the files written on a host: server.properties, zoo.cfg, services (pure)
    host_facts         run on a host (stdlib only): python, java, releases, file checksums, dirs
    host_plan          what an install changes on a host, from its facts (pure)
    rolling            the rolling restart's order and health gates (pure)
    rolling_restart    the rolling restart's loop, over an injected cluster
    restart_policy     when the supervisor restarts a crashed service, when it gives up (pure)
    supervisor_definitions  the supervisor's service definitions and pid records (pure)
    supervisor_files   the supervisor's files and processes: atomic records, liveness, the lock
    supervisor         run on a host without systemd: starts, stops and watches a service
    known_hosts        OpenSSH's known_hosts: read, fingerprints, trust-on-first-use append
    ssh                connect(): one host's SSH session (commands, files), paramiko
    parallel           on_hosts(): work on many hosts at once, a bounded thread pool
    install            plan and install over SSH: facts in, steps out (the shell of host_plan)
    services           start, stop, status of a host's services: the supervisor or systemd
    operations         every deploy command over the hosts of an inventory (control side)
    wheelhouse         the wheels of the core install a host gets: build_wheelhouse, load_wheelhouse
"""
